defmodule Mix.Tasks.Emily.Doctor do
  @shortdoc "Checks Emily's installation: platform, devices, engine, a smoke test per device"
  @moduledoc """
  Prints the platform, the engine's version, the devices found and the
  callbacks the engine implements, then runs a small computation on every
  device (through `Emily.Native`, and through `Nx` when it is available)
  and checks its result.

      mix emily.doctor

  Exits with a non-zero status if a device fails its smoke test.
  """
  use Mix.Task

  @impl true
  def run(_args) do
    Mix.Task.run("app.start")
    shell = Mix.shell()

    {family, name} = :os.type()
    arch = :erlang.system_info(:system_architecture) |> to_string()

    shell.info("Emily doctor")
    shell.info("  platform:  #{family}/#{name} #{arch}, #{System.schedulers_online()} schedulers")

    shell.info(
      "  runtime:   Elixir #{System.version()}, OTP #{:erlang.system_info(:otp_release)}, " <>
        "#{:erlang.system_info(:dirty_cpu_schedulers)} dirty CPU schedulers"
    )

    shell.info("  engine:    libemily #{Emily.version()}")
    callbacks = Emily.Native.callbacks()
    shell.info("  callbacks: #{length(callbacks)} Nx.Backend callbacks implemented")

    nx =
      if Code.ensure_loaded?(Nx),
        do: "Nx #{Application.spec(:nx, :vsn)}",
        else: "not available (Emily.Native only)"

    shell.info("  nx:        #{nx}")
    devices = Emily.devices()
    shell.info("  devices:   #{Enum.map_join(devices, ", ", &format_device/1)}")

    results = Enum.map(devices, &smoke(&1, shell))

    if Enum.all?(results) do
      shell.info("all devices passed")
    else
      Mix.raise("emily.doctor: a device failed its smoke test")
    end
  end

  defp format_device(:cpu), do: "cpu"
  defp format_device({:cuda, i}), do: "cuda:#{i}"

  # 1..n as f32, times 2, summed: n(n+1), checked exactly.
  defp smoke(device, shell) do
    n = 1000
    bin = for i <- 1..n, into: <<>>, do: <<i * 1.0::float-32-little>>
    started = System.monotonic_time(:microsecond)

    result =
      try do
        x = Emily.Native.from_binary!(device, {:f, 32}, {n}, bin)
        two = Emily.Native.dispatch!(:constant, %{type: {:f, 32}, shape: {}}, [2.0, []], device)
        y = Emily.Native.dispatch!(:multiply, %{type: {:f, 32}, shape: {n}}, [x, two])

        s =
          Emily.Native.dispatch!(:sum, %{type: {:f, 32}, shape: {}}, [
            y,
            [axes: nil, keep_axes: false]
          ])

        <<total::float-32-little>> = Emily.Native.to_binary!(s)
        if total == n * (n + 1), do: :ok, else: {:error, "sum was #{total}, want #{n * (n + 1)}"}
      rescue
        e in ArgumentError -> {:error, Exception.message(e)}
      end

    result = if result == :ok, do: nx_smoke(device), else: result
    us = System.monotonic_time(:microsecond) - started

    case result do
      :ok ->
        shell.info("  #{format_device(device)}: ok (#{us} us)")
        true

      {:error, message} ->
        shell.error("  #{format_device(device)}: FAILED: #{message}")
        false
    end
  end

  if Code.ensure_loaded?(Nx) do
    defp nx_smoke(device) do
      backend = {Emily.Backend, device: device}
      t = Nx.iota({2, 3}, backend: backend)
      got = t |> Nx.multiply(2) |> Nx.sum() |> Nx.to_number()
      if got == 30, do: :ok, else: {:error, "Nx smoke test gave #{got}, want 30"}
    rescue
      e in ArgumentError -> {:error, "Nx: " <> Exception.message(e)}
    end
  else
    defp nx_smoke(_device), do: :ok
  end
end
