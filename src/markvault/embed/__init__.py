"""The embedding model: the Embedder protocol and its backends (sentence-transformers, ONNX)."""
