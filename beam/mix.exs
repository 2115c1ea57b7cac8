defmodule Emily.MixProject do
  use Mix.Project

  @version "0.1.0"
  # The Nx versions Emily.Backend implements (0.7's optional callbacks and
  # 0.12+'s Nx.Block structs are both handled).
  @nx_requirement ">= 0.7.0 and < 0.14.0"

  def project do
    [
      app: :emily,
      version: @version,
      elixir: "~> 1.14",
      compilers: [:emily_nif] ++ Mix.compilers(),
      elixirc_paths: elixirc_paths(Mix.env()),
      build_path: build_path(),
      start_permanent: Mix.env() == :prod,
      deps: deps(),
      description: "Nx backend on libemily, a C tensor engine with Nx's semantics",
      package: [
        licenses: ["Apache-2.0"],
        files: ~w(lib c_src mix.exs README.md)
      ]
    ]
  end

  def application do
    [extra_applications: [:logger]]
  end

  defp elixirc_paths(:test), do: ["lib", "test/support"]
  defp elixirc_paths(_), do: ["lib"]

  # How Nx is found (see README.md, "Nx, offline"):
  #   EMILY_NX_PATH=/path/to/nx/nx  Nx (and complex, telemetry) as path deps
  #   EMILY_NX=hex                  Nx from hex.pm, @nx_requirement
  #   EMILY_NX=none                 no Nx: Emily.Native and the engine only
  # Unset: none inside this repository's checkout (its CI is offline and
  # has no hex), hex everywhere else (the published package).
  def nx_mode do
    cond do
      path = System.get_env("EMILY_NX_PATH") -> {:path, Path.expand(path)}
      System.get_env("EMILY_NX") == "hex" -> :hex
      System.get_env("EMILY_NX") == "none" -> :none
      File.exists?(Path.expand("../include/emily/dispatch.h", __DIR__)) -> :none
      true -> :hex
    end
  end

  defp deps do
    case nx_mode() do
      {:path, nx} ->
        # Nx declares complex and telemetry as hex packages; without Hex,
        # Mix cannot even read those declarations. Our path deps override
        # them, and this SCM only lets Mix read them (see below).
        # (mix/offline_hex_scm.exs, shared with the Nx test-suite project
        # that scripts/nx_suite builds)
        unless Code.ensure_loaded?(Emily.OfflineHexSCM),
          do: Code.require_file("mix/offline_hex_scm.exs", __DIR__)

        unless Emily.OfflineHexSCM in Mix.SCM.available(), do: Mix.SCM.append(Emily.OfflineHexSCM)
        complex = System.get_env("EMILY_COMPLEX_PATH", Path.expand("../../complex", nx))
        telemetry = System.get_env("EMILY_TELEMETRY_PATH", Path.expand("../../telemetry", nx))

        [
          {:nx, path: nx, override: true},
          {:complex, path: complex, override: true},
          {:telemetry, path: telemetry, override: true}
        ]

      :hex ->
        [{:nx, @nx_requirement}]

      :none ->
        []
    end
  end

  # Each Nx checkout (and Elixir version) builds into its own directory,
  # so switching between them does not recompile everything; so do builds
  # with the debug checks compiled in (config/config.exs).
  defp build_path do
    base =
      case nx_mode() do
        {:path, nx} ->
          # relative to the repository, so that a copy elsewhere keeps its name
          nx = Path.relative_to(nx, Path.expand("..", __DIR__))
          "_build/nx-#{:erlang.phash2({nx, System.version()})}"

        _ ->
          "_build"
      end

    if System.get_env("EMILY_DEBUG_CHECKS") == "1", do: base <> "-debug", else: base
  end
end

defmodule Mix.Tasks.Compile.EmilyNif do
  @moduledoc """
  Builds libemily with the repository's Makefile (`make -C .. BUILD/libemily.a`,
  BUILD from `EMILY_BUILD_DIR`, default `build`, or `build-san` with
  `EMILY_SAN=1`, which builds both with AddressSanitizer and UBSan; the engine's directory
  from `EMILY_ENGINE_DIR`, default the repository root) and links `c_src/*.c`
  against it into `priv/libemily_nif.so`, with the Makefile's own link
  flags (`LDFLAGS` and `LDLIBS`, which include the CUDA libraries when the
  library was built with CUDA).

  `EMILY_LINK=shared` links `BUILD/libemily.so` instead (the GPU pack's one
  engine library, `make EXPORT_ALL=1`: bench/gpu/pack_beam.sh), found at
  run time in BUILD or on `LD_LIBRARY_PATH`.
  """
  use Mix.Task.Compiler

  @beam_dir __DIR__

  @impl true
  def run(_args) do
    so = Path.join(@beam_dir, "priv/libemily_nif.so")

    # EMILY_PREBUILT=1 uses priv/libemily_nif.so as it is (a NIF built
    # elsewhere, e.g. copied to a machine without the engine's toolchain)
    if System.get_env("EMILY_PREBUILT") in ["1", "true"] and File.exists?(so) do
      Mix.Project.build_structure()
      {:noop, []}
    else
      build(so)
    end
  end

  defp build(so) do
    root = Path.expand(System.get_env("EMILY_ENGINE_DIR", ".."), @beam_dir)
    san? = System.get_env("EMILY_SAN") in ["1", "true"]
    build = System.get_env("EMILY_BUILD_DIR", if(san?, do: "build-san", else: "build"))
    shared? = System.get_env("EMILY_LINK") == "shared"
    lib = Path.expand(Path.join(build, if(shared?, do: "libemily.so", else: "libemily.a")), root)
    jobs = to_string(System.schedulers_online())
    make_vars = ["BUILD=#{build}"] ++ if(san?, do: ["SAN=1"], else: [])

    make!(root, ["-j", jobs] ++ make_vars ++ [Path.join(build, Path.basename(lib))], :stream)

    link =
      make!(
        root,
        [
          "-s",
          "--no-print-directory"
        ] ++
          make_vars ++
          [
            "--eval",
            "emily-print-link-flags: ; @echo '$(LDFLAGS) $(LDLIBS)'",
            "emily-print-link-flags"
          ],
        :capture
      )
      |> String.split()

    # `mix test` links the C conformance runner's property checks in
    # (c_src/test_hooks.c); other builds do not carry them.
    test? = Mix.env() == :test

    test_sources =
      if test?,
        do:
          Enum.map(
            ~w(properties.c properties_exact.c property_math.c json_values.c),
            &Path.join([root, "tests/conformance", &1])
          ),
        else: []

    sources = Path.wildcard(Path.join(@beam_dir, "c_src/*.c")) ++ test_sources
    headers = Path.wildcard(Path.join(@beam_dir, "c_src/*.h"))

    includes =
      Path.wildcard(Path.join(root, "include/emily/*.h")) ++
        if(test?, do: Path.wildcard(Path.join(root, "tests/conformance/*.h")), else: [])

    # a NIF built for another configuration (sanitizers or not) is stale too
    stamp = Path.join(@beam_dir, "priv/.emily_nif_build")
    config = "#{root} #{build} #{san?} #{test?} #{shared?}"
    same_config? = File.read(stamp) == {:ok, config}

    if not same_config? or
         Mix.Utils.stale?(sources ++ headers ++ includes ++ [lib, __ENV__.file], [so]) do
      File.mkdir_p!(Path.dirname(so))
      cc = System.get_env("CC", "cc")

      san_flags = if san?, do: ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"], else: []

      args =
        ["-std=c11", "-D_GNU_SOURCE", "-O2", "-g", "-fPIC", "-fvisibility=hidden", "-shared"] ++
          san_flags ++
          if(test?,
            do: ["-DEMILY_NIF_TEST", "-I", Path.join(root, "tests/conformance")],
            else: []
          ) ++
          ["-Wall", "-Wextra", "-Werror"] ++
          ["-I", Path.join(root, "include"), "-I", erts_include()] ++
          sources ++
          [lib] ++
          if(shared?, do: ["-Wl,-rpath," <> Path.dirname(lib)], else: []) ++
          link ++ macos_flags() ++ ["-o", so]

      Mix.shell().info("compiling #{Path.relative_to_cwd(so)}")

      case System.cmd(cc, args, stderr_to_stdout: true) do
        {out, 0} ->
          IO.write(out)
          File.write!(stamp, config)
          # links priv/ into the build directory if it was just created
          Mix.Project.build_structure()
          {:ok, []}

        {out, status} ->
          IO.write(out)
          Mix.raise("#{cc} failed (exit #{status}) building the Emily NIF")
      end
    else
      {:noop, []}
    end
  end

  defp make!(root, args, how) do
    opts = [cd: root, stderr_to_stdout: true]
    opts = if how == :stream, do: [into: IO.stream(:stdio, :line)] ++ opts, else: opts

    case System.cmd("make", args, opts) do
      {out, 0} ->
        if how == :capture, do: out, else: :ok

      {out, status} ->
        details = if how == :capture, do: "\n" <> out, else: ""
        Mix.raise("make #{Enum.join(args, " ")} failed (exit #{status})#{details}")
    end
  end

  defp erts_include do
    root = :code.root_dir() |> to_string()
    versioned = Path.join([root, "erts-#{:erlang.system_info(:version)}", "include"])
    if File.dir?(versioned), do: versioned, else: Path.join([root, "usr", "include"])
  end

  defp macos_flags do
    case :os.type() do
      {:unix, :darwin} -> ["-undefined", "dynamic_lookup", "-flat_namespace"]
      _ -> []
    end
  end
end
