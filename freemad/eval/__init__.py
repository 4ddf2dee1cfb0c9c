"""Does the debate help? Accuracy of Free-MAD against majority votes and single agents."""

# The dataset formats `freemad.eval.formats` reads; here so the CLI names them without importing it.
FORMATS = ("freemad", "gsm8k", "math", "mcq", "yesno", "code")
