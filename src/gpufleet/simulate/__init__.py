"""A fleet's day before it exists: the declared scaling run through a traffic trace (discrete events, SimPy).

    behaviour = what the program declares (components/<cloud>/simulation.py reads the preview's resources)
    capacity  = what one node serves (a load test's knee, or plan capacity's per-node figure)
    trace     = requests/s over time (a file, or the day / step / spike profiles)

run.py ties them to a stack; engine.py simulates; summary.py, cost.py and report.py say what happened; check.py is
the step check every shipped stack and sweep variant passes (tests/simulate/).
"""
