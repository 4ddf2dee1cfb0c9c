"""Does the debate help? Accuracy of Free-MAD against majority votes and single agents."""
