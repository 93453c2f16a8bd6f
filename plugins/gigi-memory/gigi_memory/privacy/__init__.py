"""What must not stay or come back: retention and the member/guild privacy hooks, erasure marks,
delete/edit tombstones and the spans a channel was paused or secure."""
