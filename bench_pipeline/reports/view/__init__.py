"""The view model both reports render, one module per report section.

``run_view.build_view`` assembles a ``RunView`` from metrics.json, the attempt records and the
manifest; each part is made by its section's module: ``run_facts`` (the header and "Run
facts"), ``capability`` (the headline), ``stability``, ``exclusions``, ``failures``,
``resources`` (time, work and cost), ``failed_tasks``, ``data_quality``, ``categories`` and
``tasks`` (the task table). ``facts`` holds the counts a run makes beside its metrics
(``attempt_facts``, ``task_facts``); ``evidence`` the evidence folders and their links;
``limits`` how much of one kind a report lists.
"""
