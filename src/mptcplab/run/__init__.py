"""Running a lab: where its results are found."""
