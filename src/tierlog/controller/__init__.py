"""The quorum controller, sans-IO: requests in, metadata records and responses out."""
