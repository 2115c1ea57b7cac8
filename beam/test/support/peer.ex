defmodule Emily.Test.Peer do
  @moduledoc """
  Two-node tests: distribution for the test VM and peer nodes (OTP 25's
  `:peer`) started with this VM's code paths, so that they load the same
  Emily (and its NIF), Nx and test support modules. What a peer runs must
  be code on disk (these support modules, Emily, Nx), not functions
  defined in test files.

  `test_helper.exs` calls `ensure_distribution/0` once; the `:distributed`
  tests are excluded, with the reason printed, only when it fails.
  """

  @doc """
  Makes this VM a distributed node if it is not one (starting epmd if it is
  not running): `:ok` or `{:error, reason}`.
  """
  def ensure_distribution do
    cond do
      Node.alive?() ->
        :ok

      not Code.ensure_loaded?(:peer) ->
        {:error, "OTP #{:erlang.system_info(:otp_release)} has no :peer module (OTP 25+)"}

      true ->
        start_epmd()
        start_node(System.unique_integer([:positive]))
    end
  end

  defp start_epmd do
    case System.find_executable("epmd") do
      nil -> :ok
      epmd -> System.cmd(epmd, ["-daemon"], stderr_to_stdout: true)
    end
  end

  # short names first; a host whose short name does not resolve gets a
  # long name on 127.0.0.1. epmd may take a moment to listen after -daemon.
  defp start_node(id, attempts \\ 5) do
    short = Node.start(:"emily_test_#{id}", :shortnames)

    result =
      case short do
        {:ok, _} -> short
        {:error, _} -> Node.start(:"emily_test_#{id}@127.0.0.1", :longnames)
      end

    case result do
      {:ok, _} ->
        :ok

      {:error, _} when attempts > 1 ->
        Process.sleep(200)
        start_node(id, attempts - 1)

      {:error, reason} ->
        {:error,
         "cannot start distribution (Node.start/2, short and long names): " <>
           inspect(reason, limit: 6)}
    end
  end

  @doc """
  Starts a peer node with this VM's code paths and Elixir started; returns
  `{peer, node}`. Stop it with `:peer.stop/1` (it also stops when this VM
  does: the distribution connection is its control connection).
  """
  def start! do
    paths = Enum.flat_map(:code.get_path(), &[~c"-pa", &1])
    cookie = [~c"-setcookie", Atom.to_charlist(Node.get_cookie())]
    name = :peer.random_name(~c"emily_peer")

    case :peer.start(%{name: name, args: cookie ++ paths, wait_boot: 60_000}) do
      {:ok, peer, node} ->
        {:ok, _} = :erpc.call(node, :application, :ensure_all_started, [:elixir])
        {peer, node}

      other ->
        raise "cannot start a peer node: #{inspect(other)}"
    end
  end

  @doc """
  Run on a peer (`Node.spawn_link(node, #{inspect(__MODULE__)}, :apply_loop, [])`):
  answers each `{from, ref, module, fun, args}` message with
  `{ref, apply(module, fun, args)}`.
  """
  def apply_loop do
    receive do
      {from, ref, module, fun, args} ->
        send(from, {ref, apply(module, fun, args)})
        apply_loop()
    end
  end
end

if Code.ensure_loaded?(Nx) do
  defmodule Emily.Test.PeerNx do
    @moduledoc "What the two-node Nx tests run on the peer."

    @doc "Nx started, Emily.Backend the default backend."
    def setup do
      {:ok, _} = Application.ensure_all_started(:nx)
      Nx.global_default_backend(Emily.Backend)
      :ok
    end

    @doc """
    Starts (unlinked, so that it outlives the :erpc call) an Nx.Serving of
    `Nx.multiply(x, 2)` under `name`, batch size 4.
    """
    def start_serving(name) do
      serving = Nx.Serving.new(fn opts -> Nx.Defn.jit(&Nx.multiply(&1, 2), opts) end)

      {:ok, pid} =
        Nx.Serving.start_link(serving: serving, name: name, batch_size: 4, batch_timeout: 20)

      Process.unlink(pid)
      {:ok, pid}
    end

    @doc "Runs `fun` on `args` and returns `{:ok, result}` or `{:raised, exception}`."
    def try_apply(module, fun, args) do
      {:ok, apply(module, fun, args)}
    rescue
      e -> {:raised, e}
    end
  end
end
