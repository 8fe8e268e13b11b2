/// The stable codes of `verify` findings and issue-time validation rules. The raw value is what users
/// see and what `--json` prints; `docs/error-codes.md` gives each code's meaning and fix.
public enum RuleCode: String, Sendable, CaseIterable {
    /// The URI of this code system, for a FHIR `Coding.system` that carries a rule code (the `OperationOutcome`s
    /// the server answers with): `urn:uuid:15cfebe7-d4cb-4779-821d-cf9d0e763e4f`, a random (version 4) UUID minted
    /// once for this project's rule codes and never for anything else. The project owns no domain, so no `http(s)`
    /// URL it could name stays its own; a `urn:uuid:` is a registered URN namespace (RFC 9562, RFC 8141) that needs
    /// no registry, is unique without one, and FHIR accepts UUIDs in that form as code system identifiers. The
    /// codes' meanings are docs/error-codes.md, which names this URI.
    public static let codeSystem = "urn:uuid:15cfebe7-d4cb-4779-821d-cf9d0e763e4f"

    // Files and containers
    case fileUnreadable = "FILE_UNREADABLE"
    case fileUnknownType = "FILE_UNKNOWN_TYPE"
    case fileNotJSON = "FILE_NOT_JSON"
    case fileNoCredentials = "FILE_NO_CREDENTIALS"
    case fileTrailingCharacters = "FILE_TRAILING_CHARACTERS"
    case fileBOM = "FILE_BOM"
    case fileTooLarge = "FILE_TOO_LARGE"
    case nothingToCheck = "NOTHING_TO_CHECK"
    case findingsCapped = "FINDINGS_CAPPED"

    // Compact JWS (digest section 1)
    case jwsCompactForm = "JWS_COMPACT_FORM"
    case jwsBase64URL = "JWS_BASE64URL"
    case jwsTooLong = "JWS_TOO_LONG"
    case headerNotJSON = "JWS_HEADER_NOT_JSON"
    case headerAlg = "JWS_HEADER_ALG"
    case headerZip = "JWS_HEADER_ZIP"
    case headerKidMissing = "JWS_HEADER_KID_MISSING"
    case headerExtraMember = "JWS_HEADER_EXTRA_MEMBER"
    case headerCrit = "JWS_HEADER_CRIT"

    // Compression (digest section 4)
    case deflateZlibWrapped = "DEFLATE_ZLIB_WRAPPED"
    case deflateGzipWrapped = "DEFLATE_GZIP_WRAPPED"
    case deflateInvalid = "DEFLATE_INVALID"
    case deflateTrailingData = "DEFLATE_TRAILING_DATA"
    case deflateTooLarge = "DEFLATE_TOO_LARGE"

    // Payload JSON and claims (digest sections 2 and 3)
    case payloadBOM = "PAYLOAD_BOM"
    case payloadWhitespace = "PAYLOAD_WHITESPACE"
    case payloadNotJSON = "PAYLOAD_NOT_JSON"
    case issMissing = "ISS_MISSING"
    case issNotHTTPS = "ISS_NOT_HTTPS"
    case issTrailingSlash = "ISS_TRAILING_SLASH"
    case issMalformed = "ISS_MALFORMED"
    case issNotCanonical = "ISS_NOT_CANONICAL"
    case nbfMissing = "NBF_MISSING"
    case nbfNotNumber = "NBF_NOT_NUMBER"
    case nbfMilliseconds = "NBF_MILLISECONDS"
    case nbfFractional = "NBF_FRACTIONAL"
    case nbfNotYetValid = "NBF_NOT_YET_VALID"
    case nbfBeforeEvent = "NBF_BEFORE_EVENT"
    case nbfOutOfRange = "NBF_OUT_OF_RANGE"
    case expNotNumber = "EXP_NOT_NUMBER"
    case expMilliseconds = "EXP_MILLISECONDS"
    case expExpired = "EXP_EXPIRED"
    case expBeforeNbf = "EXP_BEFORE_NBF"
    case expOutOfRange = "EXP_OUT_OF_RANGE"
    case vcMissing = "VC_MISSING"
    case vcTypeHealthCard = "VC_TYPE_HEALTH_CARD"
    case vcTypeLegacy = "VC_TYPE_LEGACY"
    case vcContext = "VC_CONTEXT"
    case vcFHIRVersion = "VC_FHIR_VERSION"
    case vcBundleMissing = "VC_BUNDLE_MISSING"
    case ridInvalid = "RID_INVALID"

    // Signature and keys used for it (digest sections 1 and 7)
    case sigDER = "SIG_DER"
    case sigLength = "SIG_LENGTH"
    case sigInvalid = "SIG_INVALID"
    case sigNotChecked = "SIG_NOT_CHECKED"
    case kidUnknown = "KID_UNKNOWN"
    case kidWrong = "KID_WRONG"
    case revoked = "REVOKED"
    case keyNotFromIssuer = "KEY_NOT_FROM_ISSUER"
    case keySetInvalid = "KEY_SET_INVALID"

    // Minimization (digest section 3)
    case minResourceID = "MIN_RESOURCE_ID"
    case minMeta = "MIN_META"
    case minText = "MIN_TEXT"
    case minCodeableConceptText = "MIN_CODEABLECONCEPT_TEXT"
    case minCodingDisplay = "MIN_CODING_DISPLAY"
    case minEmptyElement = "MIN_EMPTY_ELEMENT"
    case minStringWhitespace = "MIN_STRING_WHITESPACE"
    case stringControlCharacter = "STRING_CONTROL_CHARACTER"

    // FHIR Bundle and SHC IG profiles (digest section 9)
    case bundleResourceType = "BUNDLE_RESOURCE_TYPE"
    case bundleType = "BUNDLE_TYPE"
    case bundleFullURL = "BUNDLE_FULLURL"
    case bundleEntryNoResource = "BUNDLE_ENTRY_NO_RESOURCE"
    case bundlePatientCount = "BUNDLE_PATIENT_COUNT"
    case bundleNoClinicalEntry = "BUNDLE_NO_CLINICAL_ENTRY"
    case resourceTypeMissing = "RESOURCE_TYPE_MISSING"
    case referenceUnresolved = "REFERENCE_UNRESOLVED"
    case patientName = "PATIENT_NAME"
    case patientNameForm = "PATIENT_NAME_FORM"
    case patientPhoto = "PATIENT_PHOTO"
    case patientBirthDateMissing = "PATIENT_BIRTHDATE_MISSING"
    case patientBirthDate = "PATIENT_BIRTHDATE"
    case patientContact = "PATIENT_CONTACT"
    case patientAddressDetail = "PATIENT_ADDRESS_DETAIL"
    case patientIdentifier = "PATIENT_IDENTIFIER"
    case patientGender = "PATIENT_GENDER"
    case patientDataMinimization = "PATIENT_DATA_MINIMIZATION"
    case fhirUnknownElement = "FHIR_UNKNOWN_ELEMENT"
    case immunizationStatus = "IMMUNIZATION_STATUS"
    case immunizationVaccineCode = "IMMUNIZATION_VACCINE_CODE"
    case immunizationPatient = "IMMUNIZATION_PATIENT"
    case immunizationOccurrence = "IMMUNIZATION_OCCURRENCE"
    /// The date of a dose is not `YYYY-MM-DD` (a time of day, or only a year or month): IG vc-date-invariant, a warning.
    case immunizationOccurrenceDate = "IMMUNIZATION_OCCURRENCE_DATE"
    case immunizationLotNumber = "IMMUNIZATION_LOT_NUMBER"
    case immunizationPerformer = "IMMUNIZATION_PERFORMER"
    case immunizationSubpotent = "IMMUNIZATION_SUBPOTENT"
    case immunizationProtocolApplied = "IMMUNIZATION_PROTOCOL_APPLIED"
    case immunizationDataMinimization = "IMMUNIZATION_DATA_MINIMIZATION"
    case observationStatus = "OBSERVATION_STATUS"
    case observationCode = "OBSERVATION_CODE"
    case observationSubject = "OBSERVATION_SUBJECT"
    case observationEffective = "OBSERVATION_EFFECTIVE"
    case observationValue = "OBSERVATION_VALUE"
    case observationValueString = "OBSERVATION_VALUE_STRING"
    /// A quantitative lab result without `referenceRange`, or a range on a coded result: IG warnings.
    case observationReferenceRange = "OBSERVATION_REFERENCE_RANGE"
    case observationDataMinimization = "OBSERVATION_DATA_MINIMIZATION"
    case dateInFuture = "DATE_IN_FUTURE"
    case dateBeforeBirth = "DATE_BEFORE_BIRTH"
    case codingCode = "CODING_CODE"
    case codeCVXUnknown = "CODE_CVX_UNKNOWN"
    case codeCVXNoVaccine = "CODE_CVX_NO_VACCINE"
    case codeCVXUnspecified = "CODE_CVX_UNSPECIFIED"
    case codeLOINCInvalid = "CODE_LOINC_INVALID"
    case codeSNOMEDInvalid = "CODE_SNOMED_INVALID"
    case metaSecurity = "META_SECURITY"
    case patientNameCharacter = "PATIENT_NAME_CHARACTER"
    case patientNameInvisible = "PATIENT_NAME_INVISIBLE"
    case immunizationDuplicate = "IMMUNIZATION_DUPLICATE"
    case bundleEntryOrder = "BUNDLE_ENTRY_ORDER"
    case bundleMixedContent = "BUNDLE_MIXED_CONTENT"
    /// A FHIR Bundle handed over to be shared breaks one of FHIR R4's own Bundle invariants (bdl-1 … bdl-12), e.g.
    /// a `document` whose first entry is not a Composition (bdl-11).
    case bundleInvariant = "BUNDLE_INVARIANT"

    // QR text and images (digest section 6)
    case qrPrefix = "QR_PREFIX"
    case qrPrefixCase = "QR_PREFIX_CASE"
    case qrOddDigits = "QR_ODD_DIGITS"
    case qrNonDigit = "QR_NON_DIGIT"
    case qrPairOutOfRange = "QR_PAIR_OUT_OF_RANGE"
    case qrChunkHeader = "QR_CHUNK_HEADER"
    case qrChunkMissing = "QR_CHUNK_MISSING"
    case qrChunkTooLong = "QR_CHUNK_TOO_LONG"
    case qrChunkUnbalanced = "QR_CHUNK_UNBALANCED"
    case qrChunked = "QR_CHUNKED"
    case qrTooLong = "QR_TOO_LONG"
    case qrNoSymbol = "QR_NO_SYMBOL"
    case qrImageUnreadable = "QR_IMAGE_UNREADABLE"
    case qrGridUnreadable = "QR_GRID_UNREADABLE"
    case qrVersionTooHigh = "QR_VERSION_TOO_HIGH"
    case qrVersionNotMinimal = "QR_VERSION_NOT_MINIMAL"
    case qrSingleSegment = "QR_SINGLE_SEGMENT"
    case qrECCLevel = "QR_ECC_LEVEL"
    case qrSegments = "QR_SEGMENTS"
    case qrSegmentsUnreadable = "QR_SEGMENTS_UNREADABLE"
    case qrChunkNeedless = "QR_CHUNK_NEEDLESS"

    // Key sets (digest section 7)
    case jwksNotJSON = "JWKS_NOT_JSON"
    case jwksNoKeys = "JWKS_NO_KEYS"
    case jwkNotSHCKey = "JWK_NOT_SHC_KEY"
    case jwkCurve = "JWK_CRV"
    case jwkUse = "JWK_USE"
    case jwkAlg = "JWK_ALG"
    case jwkCoordinates = "JWK_COORDINATES"
    case jwkKidMissing = "JWK_KID_MISSING"
    case jwkKidMismatch = "JWK_KID_MISMATCH"
    case jwkPrivateMember = "JWK_PRIVATE_MEMBER"
    case jwkX5CEncoding = "JWK_X5C_ENCODING"
    case jwkX5CUndecodable = "JWK_X5C_UNDECODABLE"
    case jwkX5CKeyMismatch = "JWK_X5C_KEY_MISMATCH"
    case jwkX5CChain = "JWK_X5C_CHAIN"
    case jwkX5CSAN = "JWK_X5C_SAN"
    case jwkX5CValidity = "JWK_X5C_VALIDITY"
    case jwkCRLVersion = "JWK_CRL_VERSION"

    // Revocation lists (digest section 8)
    case crlInvalid = "CRL_INVALID"
    case crlKidMismatch = "CRL_KID_MISMATCH"
    case crlVersionMismatch = "CRL_VERSION_MISMATCH"
    case crlDuplicateRID = "CRL_DUPLICATE_RID"
    case crlRIDTimestamp = "CRL_RID_TIMESTAMP"
    /// A revocation list file given to `verify` with no key set beside it (`…/jwks.json` next to its `crl/`
    /// folder): a list is checked only with the key set it belongs to.
    case crlWithoutKeySet = "CRL_WITHOUT_KEY_SET"

    // SMART Health Links (links-specification; docs/shl.md)
    case shlPrefix = "SHL_PREFIX"
    case shlViewerURL = "SHL_VIEWER_URL"
    case shlPayloadEncoding = "SHL_PAYLOAD_ENCODING"
    case shlPayloadNotJSON = "SHL_PAYLOAD_NOT_JSON"
    case shlPayloadForm = "SHL_PAYLOAD_FORM"
    case shlVersionUnknown = "SHL_VERSION_UNKNOWN"
    case shlURLMissing = "SHL_URL_MISSING"
    case shlURLTooLong = "SHL_URL_TOO_LONG"
    case shlURLNotHTTPS = "SHL_URL_NOT_HTTPS"
    case shlURLEntropy = "SHL_URL_ENTROPY"
    case shlKeyInvalid = "SHL_KEY_INVALID"
    case shlKeyText = "SHL_KEY_TEXT"
    case shlExpInvalid = "SHL_EXP_INVALID"
    case shlExpired = "SHL_EXPIRED"
    case shlFlagInvalid = "SHL_FLAG_INVALID"
    case shlFlagUWithP = "SHL_FLAG_U_WITH_P"
    case shlLabelInvalid = "SHL_LABEL_INVALID"
    /// A label of at most 80 Unicode characters that is over 80 UTF-16 code units, as JavaScript receivers count it.
    case shlLabelUTF16 = "SHL_LABEL_UTF16"
    /// Spaces, tabs or line ends around link text (as it is pasted), trimmed before it was read.
    case shlTextWhitespace = "SHL_TEXT_WHITESPACE"
    case shlQRECC = "SHL_QR_ECC"
    case shlQRNotMinimal = "SHL_QR_NOT_MINIMAL"
    case shlManifestNotChecked = "SHL_MANIFEST_NOT_CHECKED"
    case shlNotResolved = "SHL_NOT_RESOLVED"
    case shlFileMissing = "SHL_FILE_MISSING"
    /// The link's key decodes to 32 bytes with fewer than 16 different values (32 zero bytes: `AAAA…`): not random.
    case shlKeyWeak = "SHL_KEY_WEAK"
    /// The link was withdrawn (`revoke --link` recorded it beside the link text): `print` refuses to print it.
    case shlWithdrawn = "SHL_WITHDRAWN"
    case shlJWEForm = "SHL_JWE_FORM"
    case shlJWEHeader = "SHL_JWE_HEADER"
    case shlJWEKid = "SHL_JWE_KID"
    case shlDecryptFailed = "SHL_DECRYPT_FAILED"
    case shlIVReused = "SHL_IV_REUSED"
    case shlContent = "SHL_CONTENT"
    case shlContentNotChecked = "SHL_CONTENT_NOT_CHECKED"
    case shlBundle = "SHL_BUNDLE"
    case shlKTC = "SHL_KTC"

    // Issuing: inputs, templates, settings and outputs (the codes of `report.ndjson` and thrown errors). Every
    // `HealthCardError` has a code: its rule's, or its kind's general one (the first of each pair below).
    case inputUnreadable = "INPUT_UNREADABLE"
    case inputEncoding = "INPUT_ENCODING"
    case inputTooLarge = "INPUT_TOO_LARGE"
    case inputNotBundle = "INPUT_NOT_BUNDLE"
    /// An input file holds nothing to read: 0 bytes, or only blank lines or a byte order mark.
    case inputEmpty = "INPUT_EMPTY"
    /// A CSV value holds a character no one sees (a no-break space, a zero-width space, a byte order mark) inside it.
    case inputInvisibleCharacter = "INPUT_INVISIBLE_CHARACTER"
    case csvQuoting = "CSV_QUOTING"
    case csvFieldCount = "CSV_FIELD_COUNT"
    case csvHeader = "CSV_HEADER"
    case patientIDMissing = "PATIENT_ID_MISSING"
    case patientIDDuplicate = "PATIENT_ID_DUPLICATE"
    case patientInSeveralFiles = "PATIENT_IN_SEVERAL_FILES"
    case templateValue = "TEMPLATE_VALUE"
    /// Two CSV rows with the same event id (`eventKey`) and different data: which is right cannot be known.
    case eventConflict = "EVENT_CONFLICT"
    case templateRequiredEmpty = "TEMPLATE_REQUIRED_EMPTY"
    /// A date column holds a date with a time of day (`3/15/2021 0:00`, how a spreadsheet exports a datetime cell).
    case templateDateWithTime = "TEMPLATE_DATE_WITH_TIME"
    case templateInvalid = "TEMPLATE_INVALID"
    case bundleInvalid = "BUNDLE_INVALID"
    case validationFailed = "VALIDATION_FAILED"
    case ridCollision = "RID_COLLISION"
    case ridRevoked = "RID_REVOKED"
    case ridNone = "RID_NONE"
    /// The signing key was dropped from the site's key set while a batch was signing: the rest is not signed.
    case keyDropped = "KEY_DROPPED"
    case cardReplaced = "CARD_REPLACED"
    /// The shards given to a merge are not the whole batch: one is missing, given twice, not finished, or
    /// records of the batch are in no shard or in two.
    case shardIncomplete = "SHARD_INCOMPLETE"
    /// Shards of one batch that were not run alike: another number of shards, issuer, key or input.
    case shardMismatch = "SHARD_MISMATCH"
    /// One person's records in two shards (the shards did not split the batch by the same person key).
    case shardPersonSplit = "SHARD_PERSON_SPLIT"
    case configurationInvalid = "CONFIGURATION_INVALID"
    case keyUnusable = "KEY_UNUSABLE"
    case cryptoFailed = "CRYPTO_FAILED"
    case compressionFailed = "COMPRESSION_FAILED"
    case qrFailed = "QR_FAILED"
    case imageFailed = "IMAGE_FAILED"
    case outputFailed = "OUTPUT_FAILED"
    /// A record's file inside the output folder (its card, QR image, PDF or link text) is a symbolic link the run
    /// did not make: nothing is written through it, and the record is not issued.
    case outputSymlink = "OUTPUT_SYMLINK"
    case linkFailed = "LINK_FAILED"
    /// The link already handed out was kept as it is, and something asked of it was not done (it was not updated
    /// to this card, or not renewed): the message says which.
    case linkKept = "LINK_KEPT"
    /// The link already handed out now opens this run's content (its file encrypted again, same key and URL).
    case linkUpdated = "LINK_UPDATED"
    /// A card issued by an earlier run gets no SMART Health Link in this one (withdrawn, or its file gone from the
    /// site) and its PDF printed that link: the PDF was printed again without it.
    case pdfReprintedWithoutLink = "PDF_REPRINTED_WITHOUT_LINK"
    case pdfFailed = "PDF_FAILED"
    /// A printed card would show a character no installed font has a glyph for (an empty box): its PDF is
    /// refused, the card itself is not.
    case pdfGlyphMissing = "PDF_GLYPH_MISSING"
    /// A person's name does not fit whole on the printed wallet card even at its smallest size: its PDF is
    /// refused rather than a letter of the name lost.
    case pdfNameTooLong = "PDF_NAME_TOO_LONG"

    // The server's `$health-cards-issue` (docs/server.md), said in its OperationOutcomes.
    /// The request body is not a FHIR `Parameters`, lacks `credentialType`, or has a `_since` that is not a
    /// FHIR dateTime (400).
    case operationBody = "OPERATION_BODY_INVALID"
    /// No imported batch run issued for the patient id (404).
    case operationUnknownPatient = "OPERATION_PATIENT_UNKNOWN"
    /// No access token, or one that does not verify or is expired, for another audience or from another
    /// issuer (401).
    case operationUnauthorized = "OPERATION_UNAUTHORIZED"
    /// A good access token for another patient, or without a scope for the types asked (403).
    case operationForbidden = "OPERATION_FORBIDDEN"
    /// The card database is not available (503), or the server failed (500).
    case operationUnavailable = "OPERATION_UNAVAILABLE"

    /// The usual severity. A few codes are reported as warnings in some contexts; the `Finding` says.
    public var severity: Finding.Severity {
        switch self {
        case .headerExtraMember, .jwsTooLong, .nbfFractional, .vcTypeLegacy, .vcContext, .vcFHIRVersion, .sigNotChecked,
            .bundleNoClinicalEntry, .patientBirthDateMissing, .immunizationLotNumber, .immunizationPerformer,
            .immunizationProtocolApplied, .observationValueString, .qrChunkUnbalanced, .qrChunked, .qrGridUnreadable,
            .qrVersionNotMinimal, .qrECCLevel, .jwkNotSHCKey, .crlDuplicateRID, .codeCVXUnspecified, .patientIdentifier,
            .patientGender, .patientDataMinimization, .immunizationDataMinimization, .observationDataMinimization,
            .bundleEntryOrder, .bundleMixedContent, .immunizationOccurrenceDate, .observationReferenceRange, .jwkX5CValidity, .qrSegmentsUnreadable, .shlViewerURL, .shlURLNotHTTPS,
            .shlURLEntropy, .shlQRECC, .shlManifestNotChecked, .shlNotResolved, .findingsCapped, .patientNameInvisible,
            .qrPrefixCase, .shlPayloadForm, .shlKeyText, .shlQRNotMinimal, .shlJWEKid, .shlContentNotChecked, .shlExpired,
            .ridNone, .ridCollision, .cardReplaced, .issNotCanonical, .pdfReprintedWithoutLink, .linkKept, .linkUpdated, .shlKeyWeak, .shlLabelUTF16,
            .shlTextWhitespace:
            return .warning
        default:
            return .error
        }
    }
}
