"""Safe model rollout (issue 31): a plan of traffic steps between the fleet's current group and a candidate group,
gates measured against both groups' live endpoints before each step, automatic rollback, and a state file that
survives a crash. Cloud-neutral: the stack file changes come from gpufleet.stacks.rollout, the deploy is `pulumi up`.

- plan.py     the steps (canary 0 -> 5 -> 25 -> 50 -> 100 %, blue/green 0 -> 100 %) and the spec change of each
- gates.py    each gate's verdict from measured figures (pure)
- measure.py  the figures: health, the load-test client against both endpoints, vLLM's /metrics
- answers.py  the answer-regression prompts (package data + the user's file), greedy requests, exact match, similarity
- state.py    the state file beside the stack file (atomic writes) and the operator lock
- deploy.py   `pulumi up` through the Automation API when the Pulumi CLI is on PATH, else the exact commands
- runner.py   start / step / promote / abort / finish: one transition each, resumable
"""
