"""The live class: an instructor's session that students join with a code (issue 31)."""
