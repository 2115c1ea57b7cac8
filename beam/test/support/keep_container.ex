if Code.ensure_loaded?(Nx) do
  defmodule Emily.Test.KeepContainer do
    @moduledoc false
    # A container with a compile-time (`keep`) field, as
    # Emily.MixedPrecision.LossScale has: compiler_test checks that
    # Emily.Compiler compiles again when it differs. Here, not in the test
    # file, so that Nx's protocols are consolidated with it.
    @derive {Nx.Container, containers: [:x], keep: [:factor]}
    defstruct [:x, :factor]
  end
end
