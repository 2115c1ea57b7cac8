defmodule Emily.Test.NxDoctestLinalg do
  @moduledoc """
  The :linalg method Nx's doctests run with (set in setup_all of both doctest
  modules): Nx's own qr/eigh/svd algorithms, whose digits the
  doctests print (the LAPACK default agrees to the dtype's precision, not
  to the bit), unless EMILY_LINALG=lapack.
  """

  def put_method do
    method = System.get_env("EMILY_LINALG", "reference") |> String.to_atom()
    Application.put_env(:emily, :linalg, method)
    :ok
  end
end
