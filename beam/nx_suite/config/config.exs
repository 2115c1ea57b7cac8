import Config

# Nx's tests compare inspect output: print no backend signature.
config :emily, add_backend_on_inspect: false

# The linear-algebra method (Emily.Backend's :linalg): Nx's own
# algorithms by default, whose digits Nx's doctests print; EMILY_LINALG=lapack
# runs the suite on the LAPACK default instead.
config :emily, linalg: String.to_atom(System.get_env("EMILY_LINALG", "reference"))
