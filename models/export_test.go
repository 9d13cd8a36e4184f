package models

// Names returns every name and alias of the table with its row's
// provider, for the external tests.
func Names() (names, providers []string) {
	for i := range table {
		r := &table[i]
		for _, n := range append([]string{r.name}, r.aliases...) {
			names = append(names, n)
			providers = append(providers, r.provider)
		}
	}
	return names, providers
}
