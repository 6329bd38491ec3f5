package bench

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"strings"
)

// RSS returns the resident set size of this process in bytes, read from
// VmRSS in /proc/self/status (Linux only).
func RSS() (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }() // read only
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			fields := strings.Fields(v) // "12345 kB"
			if len(fields) != 2 || fields[1] != "kB" {
				break
			}
			kb, err := strconv.ParseInt(fields[0], 10, 64)
			if err != nil {
				return 0, err
			}
			return kb << 10, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("no VmRSS line in /proc/self/status")
}
