"""LineSplitter: SSH output handed over line by line, whatever the chunks."""

from k8s_mgmt.ssh import channel


def test_lines_across_chunks_and_a_split_character():
    lines = []
    splitter = channel.LineSplitter(lines.append)
    data = 'one\r\ntwo ünï\n\nthree'.encode('utf-8')
    for i in range(len(data)):        # one byte at a time
        splitter.feed(data[i:i + 1])
    assert lines == ['one', 'two ünï', '']
    splitter.finish()
    assert lines == ['one', 'two ünï', '', 'three']
    splitter.finish()                 # nothing twice
    assert lines[-1] == 'three' and len(lines) == 4


def test_without_a_callback_nothing_is_kept():
    splitter = channel.LineSplitter(None)
    splitter.feed(b'a\nb')
    splitter.finish()
    assert splitter._partial == bytearray()
