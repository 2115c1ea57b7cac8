if Code.ensure_loaded?(Nx) do
  defmodule Emily.Test.FastReference do
    @moduledoc """
    The reference the Emily.Fast tests compare with: a function run on
    copies of the inputs in a process of its own whose default backend is
    Nx.BinaryBackend, with a telemetry handler that catches any callback
    Emily's engine runs there (there must be none). The reference never
    runs on the backend under test: an upstream project's rope used the
    reciprocal frequency table, and a fallback built an anti-causal mask,
    unnoticed because their references ran on the backend they tested.
    """
    import ExUnit.Assertions

    @doc """
    `fun` applied to copies of `inputs` (tensors or nil) there; the result
    comes back as `{type, shape, bytes}` (`from_wire/1` makes it a tensor).
    """
    def run(inputs, fun, timeout \\ 120_000) do
      wire = Enum.map(inputs, fn t -> t && {t.type, t.shape, Nx.to_binary(t)} end)

      Task.async(fn ->
        Nx.default_backend(Nx.BinaryBackend)
        me = self()
        id = {__MODULE__, make_ref()}
        :telemetry.attach(id, [:emily, :eval, :start], &__MODULE__.handle_eval/4, me)

        try do
          result = apply(fun, Enum.map(wire, &(&1 && from_wire(&1))))
          assert %Nx.BinaryBackend{} = result.data
          refute_received {:emily_ran, _}
          {result.type, result.shape, Nx.to_binary(result)}
        after
          :telemetry.detach(id)
        end
      end)
      |> Task.await(timeout)
    end

    @doc "A `{type, shape, bytes}` result as a Nx.BinaryBackend tensor."
    def from_wire({type, shape, bin}),
      do: bin |> Nx.from_binary(type, backend: Nx.BinaryBackend) |> Nx.reshape(shape)

    @doc false
    def handle_eval(_event, _measurements, meta, pid),
      do: if(self() == pid, do: send(pid, {:emily_ran, meta.op}))
  end
end
