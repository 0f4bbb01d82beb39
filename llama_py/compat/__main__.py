"""`python -m llama_py.compat` prints the folder to put on PYTHONPATH for `import llama_cpp`."""
from . import PATH

print(PATH)
