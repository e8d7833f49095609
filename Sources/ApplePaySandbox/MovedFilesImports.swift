// Temporary: lets the files moved out of ApplePay build unchanged in the commit that moves them (a pure rename, so
// history and merges follow them); the next commit gives each file its own imports and removes this one.
@_exported import ApplePay
