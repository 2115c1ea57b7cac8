import Config

# Compile-time options of Emily (see README.md):
#   add_backend_on_inspect: prints "Emily.Backend<device>" above a tensor
#   debug_bounds_check:     checks indices before gather/take/scatter
#   debug_detect_nan_inf:   raises when an op produces NaN or infinity
# Nx's doctests compare inspect output, so tests print no signature.
config :emily, add_backend_on_inspect: config_env() != :test

# EMILY_DEBUG_CHECKS=1 mix test --only debug_checks compiles both debug
# checks in and runs their tests (test/nx/debug_checks_test.exs).
if System.get_env("EMILY_DEBUG_CHECKS") == "1" do
  config :emily, debug_bounds_check: true, debug_detect_nan_inf: true
end
