[
  inputs: [
    "{mix,.formatter}.exs",
    "mix/*.exs",
    "nx_suite/*.exs",
    "{config,lib,test}/**/*.{ex,exs}",
    "examples/*.exs"
  ],
  line_length: 100
]
