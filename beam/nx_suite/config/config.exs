import Config

# Nx's tests compare inspect output: print no backend signature.
config :emily, add_backend_on_inspect: false

# The linear-algebra method (Emily.Backend's :linalg): Nx's own
# algorithms by default, whose digits Nx's doctests print; EMILY_LINALG=lapack
# runs the suite on the LAPACK default instead.
config :emily, linalg: String.to_atom(System.get_env("EMILY_LINALG", "reference"))

# EMILY_SUITE_MODE=value (scripts/nx_suite's "emily_value" run): results carry
# their bytes instead of a reference, so that Nx's tests that compare tensor
# structs with == compare values, as on Nx.BinaryBackend.
config :emily, by_value: System.get_env("EMILY_SUITE_MODE") == "value"
