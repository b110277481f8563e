"""tierlog: a Kafka-compatible, replicated, tiered log written in Python."""
__version__ = "0.1.0"
