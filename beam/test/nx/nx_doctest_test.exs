if Code.ensure_loaded?(Nx) do
  defmodule Emily.NxDoctestTest do
    # Nx's own doctests with Emily.Backend as the default backend.
    use Emily.Test.NxDoctestCase, async: true

    setup_all do: Emily.Test.NxDoctestLinalg.put_method()

    doctest Nx, except: [:moduledoc]
  end

  defmodule Emily.NxLinAlgDoctestTest do
    use Emily.Test.NxDoctestCase, async: true

    setup_all do: Emily.Test.NxDoctestLinalg.put_method()

    doctest Nx.LinAlg
  end

  defmodule Emily.NxRandomDoctestTest do
    # Nx.Random is written in defn: with EMILY_DEFN_COMPILER=1 these run
    # through Emily.Compiler
    use Emily.Test.NxDoctestCase, async: true

    doctest Nx.Random
  end
end
