defmodule Emily.Test.NxDoctestCase do
  @moduledoc """
  The case of the modules that run Nx's own doctests (test/nx/nx_doctest_test.exs):
  tagged `:nx`, with Emily.Backend as each test's default backend, on the
  device EMILY_DOCTEST_DEVICE names (`cpu`, `cuda`, `cuda:N`; default the
  CPU), so that the GPU machine runs the same doctests on the GPU
  (bench/gpu/run.sh). (Quoted into them, so that this module compiles
  without Nx too.)
  """
  use ExUnit.CaseTemplate

  using do
    quote do
      @moduletag :nx

      setup do
        device = Emily.Test.Corpus.env_device("EMILY_DOCTEST_DEVICE")
        Nx.default_backend({Emily.Backend, device: device})
        :ok
      end
    end
  end
end
