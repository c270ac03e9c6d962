"""Turns on other machines: what travels between the head and a node, and the Ray executor.

    shipping.py      trees and files packed for the trip, deltas, verified landing (no Ray)
    gitsync.py       lane 1 on a node (`ray.lane_1=node`): the user's tree out as commits in
                     git bundles, each turn back as one commit landed in the tree (no Ray)
    paths.py         a job's head paths made a node's paths, and back (no Ray)
    head.py          the head's side: which turns leave, their inputs, landing (no Ray)
    node.py          a lane's host on a node: its private copy, its turns, its measurements
                     (no Ray: the Ray actor wraps it, tests drive it directly)
    options.py       `--executor local|ray[=ADDRESS]`, `lane_resources.*`, `ray.*`
    joining.py       joining a cluster: each thing Ray would wait on asked first, bounded
    ray_executor.py  the `Executor` that sends lanes to a Ray cluster (imports Ray)

The control loop stays on the head and stays the only writer: a node gets a frozen `TurnJob`
(its paths rewritten) and gives back a `TurnResult` plus what the turn changed, which the
head lands in its own copy of the lane's place before the turn is recorded. That copy is
what a lost node's lane is rebuilt from; for lane 1 on a node, the user's tree is.
"""
