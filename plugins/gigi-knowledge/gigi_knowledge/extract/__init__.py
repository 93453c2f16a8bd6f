"""The model's part, checked by code: the model calls, the strict schemas their replies must match,
the complexity score that escalates an extraction and the no-verbatim guard."""
