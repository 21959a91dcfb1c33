[(identifier) (field_identifier) (type_identifier) (package_identifier)] @identifier
