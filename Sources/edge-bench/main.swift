// Placeholder: the benchmark driver replaces this file.
print("edge-bench: not yet built")
