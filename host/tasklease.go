package host

import "github.com/skeinrun/skein/host/internal/exec"

// DefaultTaskLeaseTTL is the default of Config.TaskLeaseTTL.
const DefaultTaskLeaseTTL = exec.DefaultTaskLeaseTTL
