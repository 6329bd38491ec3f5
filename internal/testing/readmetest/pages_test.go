package readmetest

// page is a Markdown page whose ```sh blocks TestPages runs, and what
// their output must hold.
type page struct {
	path  string   // from the repository root
	needs []string // guest toolchains its commands use: "C", "Rust"
	want  []string // texts the commands must print
}

// pages are the pages with command blocks, in the order TestPages runs
// them. No page depends on another: each runs in a fresh copy of the
// tree, from its first block to its last. TestPagesListed keeps the list
// in step with the tree.
var pages = []page{
	{path: "README.md", want: []string{
		`["s2:slow-result","f2:fast-result"]`, // make demo
	}},
	{path: "docs/getting-started.md", want: []string{
		"result: 15", // skein run of the sequence
		"skein resolve h1.approve --value 'JSON'", // skein status of the first workflow
		"hello ana, approved by bo",               // the first workflow
	}},
	{path: "docs/workflows.md", needs: []string{"C"}, want: []string{
		"refund of 40 checked, approved by policy, paid", // skein resume onto v2
		`["s2:slow-result","f2:fast-result"]`,            // the C race
		"0 divergences",                                  // skein check of the C race
	}},
	{path: "docs/serving.md", want: []string{
		"ticket:laptop approved by ana", // skein wait
		"ticket:chair rejected by bo",   // the curl walkthrough
	}},
	{path: "docs/activities.md", want: []string{
		`"receipt":"rcpt-o-1.2"`, // the order's result
		"charge o-1 attempt 2",   // its worker, retrying the charge
	}},
	{path: "docs/schedules.md", want: []string{
		"security digest for", // the run the signed webhook started
	}},
	{path: "docs/checking.md", want: []string{
		"0 divergences, ids schedule-independent", // skein check of the race
	}},
	{path: "docs/embedding.md", want: []string{
		`completed "hello, ADA"`, // greet, with its granted activity
		`activity "secrets" is not granted to module sneaky`,
	}},
	{path: "docs/PERFORMANCE.md", want: []string{
		"steps_per_s", // skein bench --quick
	}},
	{path: "guest-sdk/rust/README.md", needs: []string{"Rust"}, want: []string{
		`["s2:slow-result","f2:fast-result"]`, // the Rust race, replayed at every wait
		"0 divergences",                       // skein check of it
	}},
}
