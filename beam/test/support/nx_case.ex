if Code.ensure_loaded?(Nx) do
  defmodule Emily.Test.NxCase do
    @moduledoc """
    The case of the tests that run Nx on Emily.Backend: tagged `:nx` (run
    only where Nx is loaded; see test_helper.exs), each test with
    Emily.Backend as its process's default backend (set before the
    module's own setup). Options go to ExUnit.Case (`async:`).

        use Emily.Test.NxCase, async: false
    """
    use ExUnit.CaseTemplate

    using do
      quote do
        @moduletag :nx
      end
    end

    setup do
      Nx.default_backend(Emily.Backend)
      :ok
    end
  end
end
