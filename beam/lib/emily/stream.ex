defmodule Emily.Stream do
  @moduledoc """
  Per-process streams.

  Each process runs its Emily operations on its current stream (the
  device's default stream unless set). Work on different streams may run
  concurrently on a device, so several processes can share one model (its
  tensors) and compute at once, each on its own stream:

      stream = Emily.Stream.new(:cuda)
      Emily.Stream.run(stream, fn -> Nx.dot(weights, input) end)

  The engine orders buffers used across streams, so a tensor made on one
  stream can be used on another. On the CPU, work runs when called and a
  stream only carries the process's identity; the API is the same.
  A stream is freed, after its work finishes, when it is garbage-collected.
  """

  defstruct [:ref, :device]

  @key {__MODULE__, :current}

  @doc "A new stream on `device` (`:cpu`, `:cuda` or `{:cuda, i}`)."
  def new(device \\ :cpu) do
    device = Emily.normalize_device(device)
    %__MODULE__{ref: Emily.Native.ok!(Emily.Native.stream_new(device)), device: device}
  end

  @doc "Makes `stream` (or `nil`: the default) the calling process's current stream; returns the previous one."
  def set_current(nil), do: Process.delete(@key)
  def set_current(%__MODULE__{} = stream), do: Process.put(@key, stream)

  @doc "The calling process's current stream, or `nil`."
  def current, do: Process.get(@key)

  @doc "Runs `fun` with `stream` as the current stream, then restores the previous one."
  def run(%__MODULE__{} = stream, fun) when is_function(fun, 0) do
    previous = set_current(stream)

    try do
      fun.()
    after
      set_current(previous)
    end
  end

  @doc "Waits until the stream's queued work is done."
  def synchronize(%__MODULE__{ref: ref}), do: Emily.Native.ok!(Emily.Native.stream_synchronize(ref))

  @doc false
  # The NIF's view: the stream reference of the current process.
  def current_ref do
    case Process.get(@key) do
      %__MODULE__{ref: ref} -> ref
      nil -> nil
    end
  end
end
