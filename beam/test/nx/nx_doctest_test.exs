if Code.ensure_loaded?(Nx) do
  defmodule Emily.NxDoctestTest do
    # Nx's own doctests with Emily.Backend as the default backend.
    use ExUnit.Case, async: true
    @moduletag :nx

    # Nx's doctests print Nx's own qr/eigh/svd digits: run its algorithms
    # (the LAPACK default agrees to the dtype's precision, not to the bit)
    setup_all do
      Application.put_env(:emily, :linalg, System.get_env("EMILY_LINALG", "reference") |> String.to_atom())
      :ok
    end

    setup do
      Nx.default_backend(Emily.Backend)
      :ok
    end

    doctest Nx, except: [:moduledoc]
  end

  defmodule Emily.NxLinAlgDoctestTest do
    use ExUnit.Case, async: true
    @moduletag :nx

    # Nx's doctests print Nx's own qr/eigh/svd digits: run its algorithms
    # (the LAPACK default agrees to the dtype's precision, not to the bit)
    setup_all do
      Application.put_env(:emily, :linalg, System.get_env("EMILY_LINALG", "reference") |> String.to_atom())
      :ok
    end

    setup do
      Nx.default_backend(Emily.Backend)
      :ok
    end

    doctest Nx.LinAlg
  end
end
