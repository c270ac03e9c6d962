"""parallel_flame_chase:git_pr's runtime programs: the central repository and its hook, lane
clones, clean checkouts, merges and publication (see `flamechase.tools`). Started isolated
(`python -I -m flamechase.tools.git_pr.<name>`); they import the tools' leaves only."""
