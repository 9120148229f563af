"""Published leaderboard data and the static site template (data, not code)."""
