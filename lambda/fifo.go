package lambda

// sequences splits the batch into the units that run concurrently. Records inside one
// sequence run in order, and a failure skips the rest of its sequence:
//
//   - standard queue: every record is a sequence of its own;
//   - FIFO, FIFOSkipFailedGroup: one sequence per message group, in batch order (AWS may
//     put several groups in one batch);
//   - FIFO, FIFOStopAtFirstFailure: the whole batch is one sequence.
func sequences(records []*record, fifo bool, mode FIFOMode) [][]*record {
	switch {
	case !fifo:
		units := make([][]*record, len(records))
		for i := range records {
			units[i] = records[i : i+1 : i+1]
		}
		return units
	case mode == FIFOStopAtFirstFailure:
		return [][]*record{records}
	}
	var units [][]*record
	index := make(map[string]int)
	for _, r := range records {
		group := r.message.GroupID
		i, ok := index[group]
		if !ok {
			i = len(units)
			index[group] = i
			units = append(units, nil)
		}
		units[i] = append(units[i], r)
	}
	return units
}

// skipReason names why a record was reported failed without being handled.
func skipReason(fifo bool, mode FIFOMode) string {
	if !fifo {
		return ""
	}
	if mode == FIFOStopAtFirstFailure {
		return "an earlier record of the batch failed"
	}
	return "an earlier record of its message group failed"
}
