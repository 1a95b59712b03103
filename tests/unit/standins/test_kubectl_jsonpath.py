"""The kubectl stand-in's JSONPath templates, as real kubectl reads them:
expressions in braces, quoted literals in braces, plain text between."""

from k8s_mgmt_lab.kube import kubectl

SECRET = {'data': {'token': 'VE9L', 'ca.crt': 'Q0E='},
          'items': [{'metadata': {'name': 'a'}},
                    {'metadata': {'name': 'b'}}]}


def test_one_expression():
    assert kubectl.template(SECRET, '{.data.token}') == 'VE9L'
    assert kubectl.template(SECRET, '{.items[*].metadata.name}') == 'a b'


def test_expressions_and_literals():
    assert kubectl.template(
        SECRET, '{.data.token}{"|"}{.data.ca\\.crt}') == 'VE9L|Q0E='
    assert kubectl.template(SECRET, 'token={.data.token};') == 'token=VE9L;'


def test_a_missing_field_is_empty():
    assert kubectl.template(
        SECRET, '{.data.missing}{"|"}{.data.token}') == '|VE9L'
