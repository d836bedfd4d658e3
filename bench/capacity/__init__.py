"""Metro's capacity and cost model: AWS's default quotas (quotas.py), what each operation asks of AWS (usage.py),
closed-form ceilings (ceilings.py), a traffic profile (profile.py) and a simulated day on a small event queue
(engine.py, simulate.py); ``python -m bench.capacity`` prints a day, report.py renders docs/deploy.md's blocks.
docs/decisions/capacity-model.md says what it models and what it leaves out."""
