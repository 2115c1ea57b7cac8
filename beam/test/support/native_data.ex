defmodule Emily.Test.NativeData do
  @moduledoc false
  # Emily tensors through Emily.Native alone (no Nx needed): f32 tensors
  # as %Emily.Backend{} data, the plain-map Nx.Tensor structs and output
  # templates that the dispatcher reads, and the helpers of the tests of
  # tensors that left the VM that made them (test/emily and test/nx
  # across_nodes_test.exs).
  alias Emily.Native

  @doc "Dispatch mode: run, results as %Emily.Backend{} data."
  def as_data, do: 2

  @doc "An f32 tensor of `values` (shape `{n}` by default) as %Emily.Backend{} data."
  def f32(values, shape \\ nil) do
    bin = for v <- values, into: <<>>, do: <<v * 1.0::float-32-little>>
    ref = Native.from_binary!(:cpu, {:f, 32}, shape || {length(values)}, bin)
    Native.ok!(Native.backend_data(ref))
  end

  @doc "A plain-map Nx.Tensor struct over `data`."
  def tensor(data, shape, type \\ {:f, 32}),
    do: %{__struct__: Nx.Tensor, data: data, type: type, shape: shape}

  @doc "An output template."
  def tmpl(shape, type \\ {:f, 32}), do: %{type: type, shape: shape}

  @doc "The f32 values of a binary."
  def floats(bin), do: for(<<v::float-32-little <- bin>>, do: v)

  @doc "Runs a callback, results as data."
  def dispatch(name, out, args), do: Native.dispatch(name, out, args, nil, nil, as_data())

  @doc "Whether the data's engine tensor exists in this VM."
  def local?(%{ref: ref}), do: Native.check_local(ref) == :ok

  @doc """
  `external` (a term_to_binary'd tensor whose engine tensor belonged to a
  process that exited) read back once that engine tensor is gone (it is
  freed when the exited process's heap is).
  """
  def wait_gone(external, tries \\ 100) do
    t = :erlang.binary_to_term(external)

    cond do
      not local?(t.data) ->
        t

      tries > 0 ->
        Process.sleep(10)
        wait_gone(external, tries - 1)

      true ->
        ExUnit.Assertions.flunk("the tensor's resource is still alive after its process exited")
    end
  end
end
