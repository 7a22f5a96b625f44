"""envcheck: will TensorFlow use your NVIDIA GPU, and if not, what exactly to do."""

__version__ = "0.1.0"
