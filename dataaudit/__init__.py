"""dataaudit: find the bad data that wrecks LLM/VLM training runs."""
__version__ = "0.1.0"
