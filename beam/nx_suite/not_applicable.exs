# Tests of Nx's own suite that cannot apply to any backend other than
# Nx.BinaryBackend, by full test name, with the Nx versions they concern
# and the reason. scripts/nx_suite excludes them on Emily only; nothing
# else is excluded, and nothing of Nx is patched.
#
#   {nx_version_requirement, "test <describe> <name>", reason}
[]
