# Writes long_f64_sums.jsonl (corpus format, tests/corpus/README.md): long
# f64 and c128 sums recorded from Nx.BinaryBackend (Nx 0.13.1), whose
# in-order f64 sums carry a rounding error far above a few ULP of their
# totals (terms of mixed magnitudes, then the same terms negated, slightly
# perturbed, in reverse order, so the totals cancel).
# Run with Nx 0.13.1, complex and telemetry compiled (ebin paths L):
#   elixir -pa $L/nx/ebin -pa $L/complex/ebin -pa $L/telemetry/ebin \
#     long_f64_sums.exs > long_f64_sums.jsonl && gzip -9 long_f64_sums.jsonl
Application.ensure_all_started(:nx)
:rand.seed(:exsss, {19, 19, 19})

terms = fn n ->
  xs = for _ <- 1..div(n, 2), do: :rand.normal() * :math.pow(10, :rand.uniform() * 8 - 4)
  # the negated copy is perturbed by one part in 1e3 so the total is not 0
  xs ++ Enum.map(Enum.reverse(xs), &(-&1 * (1 + 1.0e-3 * :rand.uniform())))
end

t = fn list, shape, type -> Nx.tensor(list, type: type) |> Nx.reshape(shape) end
b64 = fn tensor -> Base.encode64(Nx.to_binary(tensor)) end
shape = fn s -> "[" <> Enum.join(Tuple.to_list(s), ",") <> "]" end
tensor_json = fn x ->
  ~s({"tensor":{"type":"#{Nx.Type.to_string(Nx.type(x))}","shape":#{shape.(Nx.shape(x))},"data":"#{b64.(x)}"}})
end
out_json = fn r -> ~s({"type":"#{Nx.Type.to_string(Nx.type(r))}","shape":#{shape.(Nx.shape(r))}}) end
result_json = fn r ->
  ~s({"type":"#{Nx.Type.to_string(Nx.type(r))}","shape":#{shape.(Nx.shape(r))},"data":"#{b64.(r)}"})
end
line = fn op, args, r, tag ->
  IO.puts(~s({"op":"#{op}","out":#{out_json.(r)},"args":[#{Enum.join(args, ",")}],"result":#{result_json.(r)},"tag":"#{tag}"}))
end

tag = "long f64 sums (issue 19)"

x = t.(terms.(4096), {4096}, :f64)
line.("sum", [tensor_json.(x), ~s({"opts":{"axes":[0],"keep_axes":false}})], Nx.sum(x), tag)

rows = Enum.flat_map(1..16, fn _ -> terms.(512) end)
x = t.(rows, {16, 512}, :f64)
line.("sum", [tensor_json.(x), ~s({"opts":{"axes":[1],"keep_axes":false}})], Nx.sum(x, axes: [1]), tag)

re = terms.(2048)
im = terms.(2048)
z = Nx.complex(t.(re, {2048}, :f64), t.(im, {2048}, :f64))
line.("sum", [tensor_json.(z), ~s({"opts":{"axes":[0],"keep_axes":false}})], Nx.sum(z), tag)

x = t.(terms.(4096), {4096}, :f64)
line.("cumulative_sum", [tensor_json.(x), ~s({"opts":{"axis":0,"reverse":false}})],
  Nx.cumulative_sum(x), tag)

x = t.(terms.(2048), {2048}, :f64)
line.("window_sum",
  [tensor_json.(x), ~s({"tuple":[1024]}),
   ~s({"opts":{"padding":[{"tuple":[0,0]}],"strides":[1],"window_dilations":[1]}})],
  Nx.window_sum(x, {1024}), tag)

a = t.(terms.(4096), {4096}, :f64)
b = t.(for(_ <- 1..4096, do: 1.0 + :rand.uniform()), {4096}, :f64)
line.("dot", [tensor_json.(a), "[0]", "[]", tensor_json.(b), "[0]", "[]"], Nx.dot(a, b), tag)
