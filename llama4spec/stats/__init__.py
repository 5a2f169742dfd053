"""The statistics core (pure): noise components and profiles, intervals, comparisons and their error
control, sequential looks and allocation, designs, and the speedup model."""
