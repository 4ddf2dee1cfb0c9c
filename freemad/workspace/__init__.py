"""Where agents' work lands: the write and command policy, and git on the user's repositories."""
