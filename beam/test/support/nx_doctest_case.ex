defmodule Emily.Test.NxDoctestCase do
  @moduledoc """
  The case of the modules that run Nx's own doctests (test/nx/nx_doctest_test.exs):
  tagged `:nx`, with Emily.Backend as each test's default backend. (Quoted
  into them, so that this module compiles without Nx too.)
  """
  use ExUnit.CaseTemplate

  using do
    quote do
      @moduletag :nx

      setup do
        Nx.default_backend(Emily.Backend)
        :ok
      end
    end
  end
end
