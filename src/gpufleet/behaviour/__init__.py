"""How a declared fleet behaves, as data the simulator reads: the vocabulary (model.py: groups, alarms, hooks,
schedules, health checks, pollers and their timings) and the node's sourced timings (timings.py, data/node.yaml).

Each cloud's package says what its resources do in these words (components/<cloud>/simulation.py); gpufleet.simulate
runs them through a day.
"""
