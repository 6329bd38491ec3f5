// Package lines turns a stream of writes into whole lines, for passing a
// guest's stdout and stderr on line by line (skein run --guest-output, the
// server's debug log).
package lines

import "bytes"

// MaxLine is the longest line kept whole; a longer one is passed on in
// pieces of this size.
const MaxLine = 64 << 10

// Writer calls emit with each line written to it, without its newline.
// Close passes on a last line that has no newline. A Writer is not safe
// for concurrent use; emit must be, if several Writers share it.
type Writer struct {
	buf  []byte
	emit func(line string)
}

// New returns a Writer that calls emit for each line.
func New(emit func(line string)) *Writer { return &Writer{emit: emit} }

// Write passes on every line that p completes. It never fails.
func (w *Writer) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.buf = append(w.buf, p...)
			for len(w.buf) >= MaxLine {
				w.emit(string(w.buf[:MaxLine]))
				w.buf = append(w.buf[:0], w.buf[MaxLine:]...)
			}
			break
		}
		w.buf = append(w.buf, p[:i]...)
		w.emit(string(bytes.TrimSuffix(w.buf, []byte("\r"))))
		w.buf = w.buf[:0]
		p = p[i+1:]
	}
	return n, nil
}

// Close passes on the last line if it has no newline.
func (w *Writer) Close() error {
	if len(w.buf) > 0 {
		w.emit(string(w.buf))
		w.buf = w.buf[:0]
	}
	return nil
}
