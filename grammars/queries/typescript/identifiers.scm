[(identifier) (property_identifier) (private_property_identifier) (type_identifier)
 (shorthand_property_identifier) (shorthand_property_identifier_pattern)] @identifier
