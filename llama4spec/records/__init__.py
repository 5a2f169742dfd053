"""The typed models of the records the tool writes and reads back (pydantic v2): finite, bounded
fields, and one line naming the file, the field and the rule for a record that breaks one."""
