from verifier.rundata.history import HistoryTail


def test_tail_counts_only_complete_new_lines(tmp_path):
    path = tmp_path / "h.jsonl"
    tail = HistoryTail(path)
    assert tail.poll().ok == 0  # no file yet
    path.write_bytes(b'{"type":"header","format":"producer-history","version":1}\n'
                     b'{"type":"invoke","f":"send","seq":0}\n'
                     b'{"type":"ok","f":"send","seq":0}\n'
                     b'{"type":"info","f":"se')  # being written
    tail.poll()
    assert (tail.ok, tail.info, tail.fail) == (1, 0, 0)
    with open(path, "ab") as f:
        f.write(b'nd","seq":1}\n{"type":"fail","f":"send","seq":2}\n{"type":"ok","f":"commit"}\n')
    tail.poll()
    assert (tail.ok, tail.info, tail.fail) == (1, 1, 1)  # the commit is not a send
