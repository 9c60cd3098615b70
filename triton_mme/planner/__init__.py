"""The capacity planner: how many models stay loaded per instance, how often a request finds its model cold,
how many instances the traffic needs and what that costs, per GPU multi-model instance type
(`triton-mme plan`, docs/capacity-planning.md)."""
