if Code.ensure_loaded?(Nx) do
  defmodule Emily.NxDoctestTest do
    # Nx's own doctests with Emily.Backend as the default backend.
    use ExUnit.Case, async: true
    @moduletag :nx

    setup_all do: Emily.Test.NxDoctestLinalg.put_method()

    setup do
      Nx.default_backend(Emily.Backend)
      :ok
    end

    doctest Nx, except: [:moduledoc]
  end

  defmodule Emily.NxLinAlgDoctestTest do
    use ExUnit.Case, async: true
    @moduletag :nx

    setup_all do: Emily.Test.NxDoctestLinalg.put_method()

    setup do
      Nx.default_backend(Emily.Backend)
      :ok
    end

    doctest Nx.LinAlg
  end

  defmodule Emily.NxRandomDoctestTest do
    # Nx.Random is written in defn: with EMILY_DEFN_COMPILER=1 these run
    # through Emily.Compiler
    use ExUnit.Case, async: true
    @moduletag :nx

    setup do
      Nx.default_backend(Emily.Backend)
      :ok
    end

    doctest Nx.Random
  end
end
