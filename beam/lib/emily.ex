defmodule Emily do
  @moduledoc """
  Emily: an `Nx` backend on libemily, a C tensor engine with exactly the
  semantics of Nx's reference backend, on the CPU and on CUDA GPUs.

      Nx.global_default_backend({Emily.Backend, device: :cpu})
      Nx.add(Nx.tensor([1, 2]), 1)

  The layers: `Emily.Backend` (one line per `Nx.Backend` callback) calls
  `Emily.Native` (the NIF: term decoding and the engine's callback
  dispatcher). See `Emily.Stream` for per-process streams and
  `Emily.Telemetry` for events.
  """

  @doc "The engine's version."
  def version, do: Emily.Native.version()

  @doc "Devices present: `:cpu`, then `{:cuda, i}` for each usable GPU."
  def devices, do: Emily.Native.devices()

  @doc """
  Normalizes a device: `:cpu`, `:cuda` (GPU 0), `{:cuda, i}`, or the
  strings `"cpu"`, `"cuda"`, `"cuda:i"`. Raises `ArgumentError` for
  anything else or for a device that is not present.
  """
  def device!(device) do
    device = normalize_device(device)

    case Emily.Native.device_check(device) do
      :ok -> device
      {:error, message} -> raise ArgumentError, "Emily: #{message}"
    end
  end

  @doc false
  def normalize_device(:cpu), do: :cpu
  def normalize_device({:cpu, 0}), do: :cpu
  def normalize_device(:cuda), do: {:cuda, 0}
  def normalize_device({:cuda, i}) when is_integer(i) and i >= 0, do: {:cuda, i}
  def normalize_device("cpu"), do: :cpu
  def normalize_device("cuda"), do: {:cuda, 0}

  def normalize_device("cuda:" <> index = text) do
    case Integer.parse(index) do
      {i, ""} when i >= 0 -> {:cuda, i}
      _ -> raise ArgumentError, "Emily: unknown device #{inspect(text)}"
    end
  end

  def normalize_device(other) do
    raise ArgumentError,
          "Emily: unknown device #{inspect(other)} (expected :cpu, :cuda or {:cuda, index})"
  end

  @doc "Waits for all work queued on a device."
  def synchronize(device \\ :cpu) do
    Emily.Native.ok!(Emily.Native.synchronize(normalize_device(device)))
  end

  @doc "Bytes held (`:active`), the peak, and cached by a device's allocator."
  def memory_stats(device \\ :cpu) do
    Emily.Native.ok!(Emily.Native.memory_stats(normalize_device(device)))
  end

  @doc """
  Frees the blocks a device's allocator keeps for reuse (the GPU's caching
  allocator; on the CPU, freed 64 KiB to 32 MiB buffers, 64 MiB at most)
  and resets its peak.
  """
  def release_cache(device \\ :cpu) do
    Emily.Native.ok!(Emily.Native.release_cache(normalize_device(device)))
  end

  @doc """
  How floating-point `dot` and `conv` multiply and accumulate, for the
  whole VM: `:fast` (the default) runs each type in its own precision
  through BLAS / cuBLAS, like numpy, PyTorch and EXLA (f16/bf16 products
  summed in f32; long or cancelling sums differ from Nx.BinaryBackend by
  up to the accumulation's error bound); `:highest` gives
  Nx.BinaryBackend's answers (f32, f16, bf16 and c64 accumulate in f64;
  f64 and c128 round exactly like the reference), at about half the speed
  for f32. The initial value is the environment variable
  `EMILY_DOT_PRECISION` (`highest` or `fast`). Per process: the backend
  option `{Emily.Backend, dot_precision: :highest}` or
  `with_dot_precision/2`. See docs/semantics.md, "Dot precision".
  """
  def dot_precision, do: Emily.Native.dot_precision()

  @doc "Sets `dot_precision/0` (`:highest` or `:fast`) for every later dot and conv of the VM."
  def put_dot_precision(precision) do
    Emily.Native.ok!(Emily.Native.set_dot_precision(validate_dot_precision!(precision)))
  end

  @doc """
  Runs `fun` with `dot` and `conv` at `precision` (`:highest` or `:fast`)
  for the calls this process makes, whatever the VM's setting; restores
  the previous scope afterwards.

      Emily.with_dot_precision(:highest, fn -> Nx.dot(a, b) end)
  """
  def with_dot_precision(precision, fun) when is_function(fun, 0) do
    precision = validate_dot_precision!(precision)
    previous = Process.put(Emily.DotPrecision, precision)

    try do
      fun.()
    after
      if previous,
        do: Process.put(Emily.DotPrecision, previous),
        else: Process.delete(Emily.DotPrecision)
    end
  end

  @doc false
  def validate_dot_precision!(precision) when precision in [:highest, :fast], do: precision

  def validate_dot_precision!(other) do
    raise ArgumentError, "dot precision must be :highest or :fast, got: #{inspect(other)}"
  end
end
