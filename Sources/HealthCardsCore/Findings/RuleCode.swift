/// The stable codes of `verify` findings and issue-time validation rules. The raw value is what users
/// see and what `--json` prints; `docs/error-codes.md` gives each code's meaning and fix.
///
/// A code is a value, not an enum case (after jwt-kit's `JWTError`): codes are added in new releases without
/// breaking a client's `switch` (which needs a `default`), and the documented codes keep their names and texts.
public struct RuleCode: RawRepresentable, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// The code as users see it: `SIG_INVALID`.
    public let rawValue: String

    /// A code by its text. Codes this library reports are its static members (`RuleCode.sigInvalid`);
    /// `known(_:)` finds one by its text. A client may make codes of its own for its own findings.
    public init(rawValue: String) { self.rawValue = rawValue }

    private init(_ rawValue: String) { self.rawValue = rawValue }

    public var description: String { rawValue }

    /// The URI of this code system, for a FHIR `Coding.system` that carries a rule code (the `OperationOutcome`s
    /// the server answers with): `urn:uuid:15cfebe7-d4cb-4779-821d-cf9d0e763e4f`, a random (version 4) UUID minted
    /// once for this project's rule codes and never for anything else. The project owns no domain, so no `http(s)`
    /// URL it could name stays its own; a `urn:uuid:` is a registered URN namespace (RFC 9562, RFC 8141) that needs
    /// no registry, is unique without one, and FHIR accepts UUIDs in that form as code system identifiers. The
    /// codes' meanings are docs/error-codes.md, which names this URI.
    public static let codeSystem = "urn:uuid:15cfebe7-d4cb-4779-821d-cf9d0e763e4f"

    // Files and containers
    public static let fileUnreadable = RuleCode("FILE_UNREADABLE")
    public static let fileUnknownType = RuleCode("FILE_UNKNOWN_TYPE")
    public static let fileNotJSON = RuleCode("FILE_NOT_JSON")
    public static let fileNoCredentials = RuleCode("FILE_NO_CREDENTIALS")
    public static let fileTrailingCharacters = RuleCode("FILE_TRAILING_CHARACTERS")
    public static let fileBOM = RuleCode("FILE_BOM")
    public static let fileTooLarge = RuleCode("FILE_TOO_LARGE")
    public static let nothingToCheck = RuleCode("NOTHING_TO_CHECK")
    public static let findingsCapped = RuleCode("FINDINGS_CAPPED")

    // Compact JWS (digest section 1)
    public static let jwsCompactForm = RuleCode("JWS_COMPACT_FORM")
    public static let jwsBase64URL = RuleCode("JWS_BASE64URL")
    public static let jwsTooLong = RuleCode("JWS_TOO_LONG")
    public static let headerNotJSON = RuleCode("JWS_HEADER_NOT_JSON")
    public static let headerAlg = RuleCode("JWS_HEADER_ALG")
    public static let headerZip = RuleCode("JWS_HEADER_ZIP")
    public static let headerKidMissing = RuleCode("JWS_HEADER_KID_MISSING")
    public static let headerExtraMember = RuleCode("JWS_HEADER_EXTRA_MEMBER")
    public static let headerCrit = RuleCode("JWS_HEADER_CRIT")

    // Compression (digest section 4)
    public static let deflateZlibWrapped = RuleCode("DEFLATE_ZLIB_WRAPPED")
    public static let deflateGzipWrapped = RuleCode("DEFLATE_GZIP_WRAPPED")
    public static let deflateInvalid = RuleCode("DEFLATE_INVALID")
    public static let deflateTrailingData = RuleCode("DEFLATE_TRAILING_DATA")
    public static let deflateTooLarge = RuleCode("DEFLATE_TOO_LARGE")

    // Payload JSON and claims (digest sections 2 and 3)
    public static let payloadBOM = RuleCode("PAYLOAD_BOM")
    public static let payloadWhitespace = RuleCode("PAYLOAD_WHITESPACE")
    public static let payloadNotJSON = RuleCode("PAYLOAD_NOT_JSON")
    public static let issMissing = RuleCode("ISS_MISSING")
    public static let issNotHTTPS = RuleCode("ISS_NOT_HTTPS")
    public static let issTrailingSlash = RuleCode("ISS_TRAILING_SLASH")
    public static let issMalformed = RuleCode("ISS_MALFORMED")
    public static let issNotCanonical = RuleCode("ISS_NOT_CANONICAL")
    public static let nbfMissing = RuleCode("NBF_MISSING")
    public static let nbfNotNumber = RuleCode("NBF_NOT_NUMBER")
    public static let nbfMilliseconds = RuleCode("NBF_MILLISECONDS")
    public static let nbfFractional = RuleCode("NBF_FRACTIONAL")
    public static let nbfNotYetValid = RuleCode("NBF_NOT_YET_VALID")
    public static let nbfBeforeEvent = RuleCode("NBF_BEFORE_EVENT")
    public static let nbfOutOfRange = RuleCode("NBF_OUT_OF_RANGE")
    public static let expNotNumber = RuleCode("EXP_NOT_NUMBER")
    public static let expMilliseconds = RuleCode("EXP_MILLISECONDS")
    public static let expExpired = RuleCode("EXP_EXPIRED")
    public static let expBeforeNbf = RuleCode("EXP_BEFORE_NBF")
    public static let expOutOfRange = RuleCode("EXP_OUT_OF_RANGE")
    public static let vcMissing = RuleCode("VC_MISSING")
    public static let vcTypeHealthCard = RuleCode("VC_TYPE_HEALTH_CARD")
    public static let vcTypeLegacy = RuleCode("VC_TYPE_LEGACY")
    public static let vcContext = RuleCode("VC_CONTEXT")
    public static let vcFHIRVersion = RuleCode("VC_FHIR_VERSION")
    public static let vcBundleMissing = RuleCode("VC_BUNDLE_MISSING")
    public static let ridInvalid = RuleCode("RID_INVALID")

    // Signature and keys used for it (digest sections 1 and 7)
    public static let sigDER = RuleCode("SIG_DER")
    public static let sigLength = RuleCode("SIG_LENGTH")
    public static let sigInvalid = RuleCode("SIG_INVALID")
    public static let sigNotChecked = RuleCode("SIG_NOT_CHECKED")
    public static let kidUnknown = RuleCode("KID_UNKNOWN")
    public static let kidWrong = RuleCode("KID_WRONG")
    public static let revoked = RuleCode("REVOKED")
    public static let keyNotFromIssuer = RuleCode("KEY_NOT_FROM_ISSUER")
    public static let keySetInvalid = RuleCode("KEY_SET_INVALID")

    // Minimization (digest section 3)
    public static let minResourceID = RuleCode("MIN_RESOURCE_ID")
    public static let minMeta = RuleCode("MIN_META")
    public static let minText = RuleCode("MIN_TEXT")
    public static let minCodeableConceptText = RuleCode("MIN_CODEABLECONCEPT_TEXT")
    public static let minCodingDisplay = RuleCode("MIN_CODING_DISPLAY")
    public static let minEmptyElement = RuleCode("MIN_EMPTY_ELEMENT")
    public static let minStringWhitespace = RuleCode("MIN_STRING_WHITESPACE")
    public static let stringControlCharacter = RuleCode("STRING_CONTROL_CHARACTER")
    public static let stringInvisibleCharacter = RuleCode("STRING_INVISIBLE_CHARACTER")

    // FHIR Bundle and SHC IG profiles (digest section 9)
    public static let bundleResourceType = RuleCode("BUNDLE_RESOURCE_TYPE")
    public static let bundleType = RuleCode("BUNDLE_TYPE")
    public static let bundleFullURL = RuleCode("BUNDLE_FULLURL")
    public static let bundleEntryNoResource = RuleCode("BUNDLE_ENTRY_NO_RESOURCE")
    public static let bundleEntryMissing = RuleCode("BUNDLE_ENTRY_MISSING")
    public static let bundlePatientCount = RuleCode("BUNDLE_PATIENT_COUNT")
    public static let bundleNoClinicalEntry = RuleCode("BUNDLE_NO_CLINICAL_ENTRY")
    public static let resourceTypeMissing = RuleCode("RESOURCE_TYPE_MISSING")
    public static let referenceUnresolved = RuleCode("REFERENCE_UNRESOLVED")
    public static let patientName = RuleCode("PATIENT_NAME")
    public static let patientNameForm = RuleCode("PATIENT_NAME_FORM")
    public static let patientPhoto = RuleCode("PATIENT_PHOTO")
    public static let patientBirthDateMissing = RuleCode("PATIENT_BIRTHDATE_MISSING")
    public static let patientBirthDate = RuleCode("PATIENT_BIRTHDATE")
    public static let patientContact = RuleCode("PATIENT_CONTACT")
    public static let patientAddressDetail = RuleCode("PATIENT_ADDRESS_DETAIL")
    public static let patientIdentifier = RuleCode("PATIENT_IDENTIFIER")
    public static let patientGender = RuleCode("PATIENT_GENDER")
    public static let patientDataMinimization = RuleCode("PATIENT_DATA_MINIMIZATION")
    public static let fhirUnknownElement = RuleCode("FHIR_UNKNOWN_ELEMENT")
    public static let immunizationStatus = RuleCode("IMMUNIZATION_STATUS")
    public static let immunizationVaccineCode = RuleCode("IMMUNIZATION_VACCINE_CODE")
    public static let immunizationPatient = RuleCode("IMMUNIZATION_PATIENT")
    public static let immunizationOccurrence = RuleCode("IMMUNIZATION_OCCURRENCE")
    /// The date of a dose is not `YYYY-MM-DD` (a time of day, or only a year or month): IG vc-date-invariant, a warning.
    public static let immunizationOccurrenceDate = RuleCode("IMMUNIZATION_OCCURRENCE_DATE")
    public static let immunizationLotNumber = RuleCode("IMMUNIZATION_LOT_NUMBER")
    public static let immunizationPerformer = RuleCode("IMMUNIZATION_PERFORMER")
    public static let immunizationSubpotent = RuleCode("IMMUNIZATION_SUBPOTENT")
    public static let immunizationProtocolApplied = RuleCode("IMMUNIZATION_PROTOCOL_APPLIED")
    public static let immunizationDataMinimization = RuleCode("IMMUNIZATION_DATA_MINIMIZATION")
    public static let observationStatus = RuleCode("OBSERVATION_STATUS")
    public static let observationCode = RuleCode("OBSERVATION_CODE")
    public static let observationSubject = RuleCode("OBSERVATION_SUBJECT")
    public static let observationEffective = RuleCode("OBSERVATION_EFFECTIVE")
    public static let observationValue = RuleCode("OBSERVATION_VALUE")
    public static let observationValueString = RuleCode("OBSERVATION_VALUE_STRING")
    /// A quantitative lab result without `referenceRange`, or a range on a coded result: IG warnings.
    public static let observationReferenceRange = RuleCode("OBSERVATION_REFERENCE_RANGE")
    public static let observationDataMinimization = RuleCode("OBSERVATION_DATA_MINIMIZATION")
    public static let dateInFuture = RuleCode("DATE_IN_FUTURE")
    public static let dateBeforeBirth = RuleCode("DATE_BEFORE_BIRTH")
    public static let codingCode = RuleCode("CODING_CODE")
    public static let codeCVXUnknown = RuleCode("CODE_CVX_UNKNOWN")
    public static let codeCVXNoVaccine = RuleCode("CODE_CVX_NO_VACCINE")
    public static let codeCVXUnspecified = RuleCode("CODE_CVX_UNSPECIFIED")
    public static let codeLOINCInvalid = RuleCode("CODE_LOINC_INVALID")
    public static let codeSNOMEDInvalid = RuleCode("CODE_SNOMED_INVALID")
    public static let metaSecurity = RuleCode("META_SECURITY")
    public static let patientNameCharacter = RuleCode("PATIENT_NAME_CHARACTER")
    public static let patientNameInvisible = RuleCode("PATIENT_NAME_INVISIBLE")
    public static let immunizationDuplicate = RuleCode("IMMUNIZATION_DUPLICATE")
    public static let bundleEntryOrder = RuleCode("BUNDLE_ENTRY_ORDER")
    public static let bundleMixedContent = RuleCode("BUNDLE_MIXED_CONTENT")
    /// A FHIR Bundle handed over to be shared breaks one of FHIR R4's own Bundle invariants (bdl-1 … bdl-12), e.g.
    /// a `document` whose first entry is not a Composition (bdl-11).
    public static let bundleInvariant = RuleCode("BUNDLE_INVARIANT")

    // QR text and images (digest section 6)
    public static let qrPrefix = RuleCode("QR_PREFIX")
    public static let qrPrefixCase = RuleCode("QR_PREFIX_CASE")
    public static let qrOddDigits = RuleCode("QR_ODD_DIGITS")
    public static let qrNonDigit = RuleCode("QR_NON_DIGIT")
    public static let qrPairOutOfRange = RuleCode("QR_PAIR_OUT_OF_RANGE")
    public static let qrChunkHeader = RuleCode("QR_CHUNK_HEADER")
    public static let qrChunkMissing = RuleCode("QR_CHUNK_MISSING")
    public static let qrChunkTooLong = RuleCode("QR_CHUNK_TOO_LONG")
    public static let qrChunkUnbalanced = RuleCode("QR_CHUNK_UNBALANCED")
    public static let qrChunked = RuleCode("QR_CHUNKED")
    public static let qrTooLong = RuleCode("QR_TOO_LONG")
    public static let qrNoSymbol = RuleCode("QR_NO_SYMBOL")
    public static let qrImageUnreadable = RuleCode("QR_IMAGE_UNREADABLE")
    /// A decoding budget stopped part of an image's reading: zxing-cpp not run on an image of too many finder-like
    /// patterns, or symbols past the most read from one image not checked.
    public static let qrDecodeBudget = RuleCode("QR_DECODE_BUDGET")
    public static let qrGridUnreadable = RuleCode("QR_GRID_UNREADABLE")
    public static let qrVersionTooHigh = RuleCode("QR_VERSION_TOO_HIGH")
    public static let qrVersionNotMinimal = RuleCode("QR_VERSION_NOT_MINIMAL")
    public static let qrSingleSegment = RuleCode("QR_SINGLE_SEGMENT")
    public static let qrECCLevel = RuleCode("QR_ECC_LEVEL")
    public static let qrSegments = RuleCode("QR_SEGMENTS")
    public static let qrSegmentsUnreadable = RuleCode("QR_SEGMENTS_UNREADABLE")
    public static let qrChunkNeedless = RuleCode("QR_CHUNK_NEEDLESS")

    // Key sets (digest section 7)
    public static let jwksNotJSON = RuleCode("JWKS_NOT_JSON")
    public static let jwksNoKeys = RuleCode("JWKS_NO_KEYS")
    public static let jwkNotSHCKey = RuleCode("JWK_NOT_SHC_KEY")
    public static let jwkCurve = RuleCode("JWK_CRV")
    public static let jwkUse = RuleCode("JWK_USE")
    public static let jwkAlg = RuleCode("JWK_ALG")
    public static let jwkCoordinates = RuleCode("JWK_COORDINATES")
    public static let jwkKidMissing = RuleCode("JWK_KID_MISSING")
    public static let jwkKidMismatch = RuleCode("JWK_KID_MISMATCH")
    public static let jwkPrivateMember = RuleCode("JWK_PRIVATE_MEMBER")
    public static let jwkX5CEncoding = RuleCode("JWK_X5C_ENCODING")
    public static let jwkX5CUndecodable = RuleCode("JWK_X5C_UNDECODABLE")
    public static let jwkX5CKeyMismatch = RuleCode("JWK_X5C_KEY_MISMATCH")
    public static let jwkX5CChain = RuleCode("JWK_X5C_CHAIN")
    public static let jwkX5CSAN = RuleCode("JWK_X5C_SAN")
    /// The x5c leaf is not valid now (an error on a card the key verifies, a warning on the key set), or was not
    /// valid at a card's nbf while it is now (a warning on that card).
    public static let jwkX5CValidity = RuleCode("JWK_X5C_VALIDITY")
    public static let jwkCRLVersion = RuleCode("JWK_CRL_VERSION")

    // Revocation lists (digest section 8)
    public static let crlInvalid = RuleCode("CRL_INVALID")
    public static let crlKidMismatch = RuleCode("CRL_KID_MISMATCH")
    public static let crlVersionMismatch = RuleCode("CRL_VERSION_MISMATCH")
    public static let crlDuplicateRID = RuleCode("CRL_DUPLICATE_RID")
    public static let crlRIDTimestamp = RuleCode("CRL_RID_TIMESTAMP")
    /// A key publishes `crlVersion`, but no revocation list was found for it.
    public static let crlMissing = RuleCode("CRL_MISSING")

    /// A revocation list file given to `verify` with no key set beside it (`…/jwks.json` next to its `crl/`
    /// folder): a list is checked only with the key set it belongs to.
    public static let crlWithoutKeySet = RuleCode("CRL_WITHOUT_KEY_SET")
    // The VCI directory (docs/directory.md)
    /// The snapshot's detached signature does not verify with the certificate's key: the directory is refused.
    public static let directorySignatureInvalid = RuleCode("DIRECTORY_SIGNATURE_INVALID")
    /// The snapshot (or its issuer list or audit) is not the directory's JSON shape, or is over its budget.
    public static let directoryInvalid = RuleCode("DIRECTORY_INVALID")
    /// The snapshot was checked with the certificate shipped beside it, not one pinned by the verifier.
    public static let directoryNotPinned = RuleCode("DIRECTORY_NOT_PINNED")
    /// The card's issuer is not in the directory (nor given a key set of its own).
    public static let directoryIssuerUnknown = RuleCode("DIRECTORY_ISSUER_UNKNOWN")
    /// The card's issuer is kept in the snapshot for the record but no longer listed.
    public static let directoryIssuerArchival = RuleCode("DIRECTORY_ISSUER_ARCHIVAL")
    /// The directory last retrieved the issuer's keys longer ago than the age allowed.
    public static let directoryKeysStale = RuleCode("DIRECTORY_KEYS_STALE")
    /// The directory's daily audit lists errors for the issuer's endpoints.
    public static let directoryIssuerAuditError = RuleCode("DIRECTORY_ISSUER_AUDIT_ERROR")

    // SMART Health Links (links-specification; docs/shl.md)
    public static let shlPrefix = RuleCode("SHL_PREFIX")
    public static let shlViewerURL = RuleCode("SHL_VIEWER_URL")
    public static let shlPayloadEncoding = RuleCode("SHL_PAYLOAD_ENCODING")
    public static let shlPayloadNotJSON = RuleCode("SHL_PAYLOAD_NOT_JSON")
    public static let shlPayloadForm = RuleCode("SHL_PAYLOAD_FORM")
    public static let shlVersionUnknown = RuleCode("SHL_VERSION_UNKNOWN")
    public static let shlURLMissing = RuleCode("SHL_URL_MISSING")
    public static let shlURLTooLong = RuleCode("SHL_URL_TOO_LONG")
    public static let shlURLNotHTTPS = RuleCode("SHL_URL_NOT_HTTPS")
    public static let shlURLEntropy = RuleCode("SHL_URL_ENTROPY")
    public static let shlKeyInvalid = RuleCode("SHL_KEY_INVALID")
    public static let shlKeyText = RuleCode("SHL_KEY_TEXT")
    public static let shlExpInvalid = RuleCode("SHL_EXP_INVALID")
    public static let shlExpired = RuleCode("SHL_EXPIRED")
    public static let shlFlagInvalid = RuleCode("SHL_FLAG_INVALID")
    public static let shlFlagUWithP = RuleCode("SHL_FLAG_U_WITH_P")
    public static let shlLabelInvalid = RuleCode("SHL_LABEL_INVALID")
    /// A label of at most 80 Unicode characters that is over 80 UTF-16 code units, as JavaScript receivers count it.
    public static let shlLabelUTF16 = RuleCode("SHL_LABEL_UTF16")
    /// Spaces, tabs or line ends around link text (as it is pasted), trimmed before it was read.
    public static let shlTextWhitespace = RuleCode("SHL_TEXT_WHITESPACE")
    public static let shlQRECC = RuleCode("SHL_QR_ECC")
    public static let shlQRNotMinimal = RuleCode("SHL_QR_NOT_MINIMAL")
    public static let shlManifestNotChecked = RuleCode("SHL_MANIFEST_NOT_CHECKED")
    public static let shlNotResolved = RuleCode("SHL_NOT_RESOLVED")
    public static let shlFileMissing = RuleCode("SHL_FILE_MISSING")
    /// The link's key decodes to 32 bytes with fewer than 16 different values (32 zero bytes: `AAAA…`): not random.
    public static let shlKeyWeak = RuleCode("SHL_KEY_WEAK")
    /// The link was withdrawn (`revoke --link` recorded it beside the link text): `print` refuses to print it.
    public static let shlWithdrawn = RuleCode("SHL_WITHDRAWN")
    public static let shlJWEForm = RuleCode("SHL_JWE_FORM")
    public static let shlJWEHeader = RuleCode("SHL_JWE_HEADER")
    public static let shlJWEKid = RuleCode("SHL_JWE_KID")
    public static let shlDecryptFailed = RuleCode("SHL_DECRYPT_FAILED")
    public static let shlIVReused = RuleCode("SHL_IV_REUSED")
    public static let shlContent = RuleCode("SHL_CONTENT")
    public static let shlContentNotChecked = RuleCode("SHL_CONTENT_NOT_CHECKED")
    public static let shlBundle = RuleCode("SHL_BUNDLE")
    public static let shlKTC = RuleCode("SHL_KTC")

    // Issuing: inputs, templates, settings and outputs (the codes of `report.ndjson` and thrown errors). Every
    // `HealthCardError` has a code: its rule's, or its kind's general one (the first of each pair below).
    public static let inputUnreadable = RuleCode("INPUT_UNREADABLE")
    public static let inputEncoding = RuleCode("INPUT_ENCODING")
    public static let inputTooLarge = RuleCode("INPUT_TOO_LARGE")
    public static let inputNotBundle = RuleCode("INPUT_NOT_BUNDLE")
    /// An input file holds nothing to read: 0 bytes, or only blank lines or a byte order mark.
    public static let inputEmpty = RuleCode("INPUT_EMPTY")
    /// A CSV value holds a character no one sees (a no-break space, a zero-width space, a byte order mark) inside it.
    public static let inputInvisibleCharacter = RuleCode("INPUT_INVISIBLE_CHARACTER")
    /// A text given as JSON is not JSON (RFC 8259 as `JSONParser` reads it); the error's location has the byte.
    public static let jsonInvalid = RuleCode("JSON_INVALID")
    public static let csvQuoting = RuleCode("CSV_QUOTING")
    public static let csvFieldCount = RuleCode("CSV_FIELD_COUNT")
    public static let csvHeader = RuleCode("CSV_HEADER")
    public static let patientIDMissing = RuleCode("PATIENT_ID_MISSING")
    public static let patientIDDuplicate = RuleCode("PATIENT_ID_DUPLICATE")
    public static let patientInSeveralFiles = RuleCode("PATIENT_IN_SEVERAL_FILES")
    public static let templateValue = RuleCode("TEMPLATE_VALUE")
    /// Two CSV rows with the same event id (`eventKey`) and different data: which is right cannot be known.
    public static let eventConflict = RuleCode("EVENT_CONFLICT")
    public static let templateRequiredEmpty = RuleCode("TEMPLATE_REQUIRED_EMPTY")
    /// A date column holds a date with a time of day (`3/15/2021 0:00`, how a spreadsheet exports a datetime cell).
    public static let templateDateWithTime = RuleCode("TEMPLATE_DATE_WITH_TIME")
    public static let templateInvalid = RuleCode("TEMPLATE_INVALID")
    public static let bundleInvalid = RuleCode("BUNDLE_INVALID")
    public static let validationFailed = RuleCode("VALIDATION_FAILED")
    public static let ridCollision = RuleCode("RID_COLLISION")
    public static let ridRevoked = RuleCode("RID_REVOKED")
    public static let ridNone = RuleCode("RID_NONE")
    /// The signing key was dropped from the site's key set while a batch was signing: the rest is not signed.
    public static let keyDropped = RuleCode("KEY_DROPPED")
    public static let cardReplaced = RuleCode("CARD_REPLACED")
    /// Two people of one run would get files of one name (`OutputNames`): the later record is not issued.
    public static let outputNameClash = RuleCode("OUTPUT_NAME_CLASH")
    /// The card of an earlier run of a person the site's list now revokes was moved out of `cards/` to `withdrawn/`.
    public static let cardWithdrawn = RuleCode("CARD_WITHDRAWN")
    /// A card of an earlier run is left in `cards/` although this run rejects its record.
    public static let cardOutdated = RuleCode("CARD_OUTDATED")
    /// A printed card or link beside a replaced card still holds the old card.
    public static let outputStale = RuleCode("OUTPUT_STALE")
    /// The shards given to a merge are not the whole batch: one is missing, given twice, not finished, or
    /// records of the batch are in no shard or in two.
    public static let shardIncomplete = RuleCode("SHARD_INCOMPLETE")
    /// Shards of one batch that were not run alike: another number of shards, issuer, key or input.
    public static let shardMismatch = RuleCode("SHARD_MISMATCH")
    /// One person's records in two shards (the shards did not split the batch by the same person key).
    public static let shardPersonSplit = RuleCode("SHARD_PERSON_SPLIT")
    public static let configurationInvalid = RuleCode("CONFIGURATION_INVALID")
    public static let keyUnusable = RuleCode("KEY_UNUSABLE")
    /// The signing key file given does not exist.
    public static let keyFileMissing = RuleCode("KEY_FILE_MISSING")
    /// The revocation secret file given does not exist.
    public static let ridSecretMissing = RuleCode("RID_SECRET_MISSING")
    /// The public demo key was given for an issuer that is not an example host.
    public static let keyDemo = RuleCode("KEY_DEMO")
    /// The folder given as an issuer site holds no key set, or records no issuer: it was not laid out (with its
    /// issuer URL).
    public static let siteNotLaidOut = RuleCode("SITE_NOT_LAID_OUT")
    /// The signing key, or the key of a revocation list, is not in the site's published key set.
    public static let keyNotPublished = RuleCode("KEY_NOT_PUBLISHED")
    public static let cryptoFailed = RuleCode("CRYPTO_FAILED")
    public static let compressionFailed = RuleCode("COMPRESSION_FAILED")
    public static let qrFailed = RuleCode("QR_FAILED")
    public static let imageFailed = RuleCode("IMAGE_FAILED")
    public static let outputFailed = RuleCode("OUTPUT_FAILED")
    /// A record's file inside the output folder (its card, QR image, PDF or link text) is a symbolic link the run
    /// did not make: nothing is written through it, and the record is not issued.
    public static let outputSymlink = RuleCode("OUTPUT_SYMLINK")
    public static let linkFailed = RuleCode("LINK_FAILED")
    /// The link already handed out was kept as it is, and something asked of it was not done (it was not updated
    /// to this card, or not renewed): the message says which.
    public static let linkKept = RuleCode("LINK_KEPT")
    /// The link already handed out now opens this run's content (its file encrypted again, same key and URL).
    public static let linkUpdated = RuleCode("LINK_UPDATED")
    /// A card issued by an earlier run gets no SMART Health Link in this one (withdrawn, or its file gone from the
    /// site) and its PDF printed that link: the PDF was printed again without it.
    public static let pdfReprintedWithoutLink = RuleCode("PDF_REPRINTED_WITHOUT_LINK")
    public static let pdfFailed = RuleCode("PDF_FAILED")
    /// A printed card would show a character no installed font has a glyph for (an empty box): its PDF is
    /// refused, the card itself is not.
    public static let pdfGlyphMissing = RuleCode("PDF_GLYPH_MISSING")
    /// A person's name does not fit whole on the printed wallet card even at its smallest size: its PDF is
    /// refused rather than a letter of the name lost.
    public static let pdfNameTooLong = RuleCode("PDF_NAME_TOO_LONG")

    // The server's `$health-cards-issue` (docs/server.md), said in its OperationOutcomes.
    /// The request body is not a FHIR `Parameters`, lacks `credentialType`, or has a `_since` that is not a
    /// FHIR dateTime (400).
    public static let operationBody = RuleCode("OPERATION_BODY_INVALID")
    /// No imported batch run issued for the patient id (404).
    public static let operationUnknownPatient = RuleCode("OPERATION_PATIENT_UNKNOWN")
    /// No access token, or one that does not verify or is expired, for another audience or from another
    /// issuer (401).
    public static let operationUnauthorized = RuleCode("OPERATION_UNAUTHORIZED")
    /// A good access token for another patient, or without a scope for the types asked (403).
    public static let operationForbidden = RuleCode("OPERATION_FORBIDDEN")
    /// The card database is not available (503), or the server failed (500).
    public static let operationUnavailable = RuleCode("OPERATION_UNAVAILABLE")
    /// The server's database cannot be reached now (a server answers 503 with Retry-After and tries again).
    public static let storeUnavailable = RuleCode("STORE_UNAVAILABLE")
    /// The database refused a statement, or holds data this program did not write.
    public static let storeFailed = RuleCode("STORE_FAILED")
    /// The database's schema is newer than this program, or could not be migrated.
    public static let storeSchema = RuleCode("STORE_SCHEMA")
    /// The database cannot be opened as given (no SQLite file there, a path that is not a file).
    public static let storeCannotOpen = RuleCode("STORE_CANNOT_OPEN")

    /// The usual severity. A few codes are reported as warnings in some contexts; the `Finding` says. A code
    /// this library does not list (one a client made) is an error.
    public var severity: Finding.Severity { Self.warnings.contains(self) ? .warning : .error }

    /// The codes whose usual severity is `warning`.
    private static let warnings: Set<RuleCode> = [
        .headerExtraMember,
        .jwsTooLong,
        .nbfFractional,
        .vcTypeLegacy,
        .vcContext,
        .vcFHIRVersion,
        .sigNotChecked,
        .bundleNoClinicalEntry,
        .patientBirthDateMissing,
        .immunizationLotNumber,
        .immunizationPerformer,
        .immunizationProtocolApplied,
        .observationValueString,
        .qrChunkUnbalanced,
        .qrChunked,
        .qrGridUnreadable,
        .qrDecodeBudget,
        .qrVersionNotMinimal,
        .qrECCLevel,
        .jwkNotSHCKey,
        .crlDuplicateRID,
        .codeCVXUnspecified,
        .patientIdentifier,
        .patientGender,
        .patientDataMinimization,
        .immunizationDataMinimization,
        .observationDataMinimization,
        .bundleEntryOrder,
        .bundleMixedContent,
        .immunizationOccurrenceDate,
        .observationReferenceRange,
        .qrSegmentsUnreadable,
        .shlViewerURL,
        .shlURLNotHTTPS,
        .shlURLEntropy,
        .shlQRECC,
        .shlManifestNotChecked,
        .shlNotResolved,
        .findingsCapped,
        .patientNameInvisible,
        .qrPrefixCase,
        .shlPayloadForm,
        .shlKeyText,
        .shlQRNotMinimal,
        .shlJWEKid,
        .shlContentNotChecked,
        .shlExpired,
        .ridNone,
        .ridCollision,
        .cardReplaced,
        .cardWithdrawn,
        .cardOutdated,
        .outputStale,
        .issNotCanonical,
        .pdfReprintedWithoutLink,
        .linkKept,
        .linkUpdated,
        .shlKeyWeak,
        .directoryNotPinned,
        .directoryIssuerArchival,
        .directoryKeysStale,
        .directoryIssuerAuditError,
        .shlLabelUTF16,
        .shlTextWhitespace,
    ]

    /// Every code this library reports, in the order of `docs/error-codes.md`'s sections.
    public static let allCases: [RuleCode] = [
        .fileUnreadable,
        .fileUnknownType,
        .fileNotJSON,
        .fileNoCredentials,
        .fileTrailingCharacters,
        .fileBOM,
        .fileTooLarge,
        .nothingToCheck,
        .findingsCapped,
        .jwsCompactForm,
        .jwsBase64URL,
        .jwsTooLong,
        .headerNotJSON,
        .headerAlg,
        .headerZip,
        .headerKidMissing,
        .headerExtraMember,
        .headerCrit,
        .deflateZlibWrapped,
        .deflateGzipWrapped,
        .deflateInvalid,
        .deflateTrailingData,
        .deflateTooLarge,
        .payloadBOM,
        .payloadWhitespace,
        .payloadNotJSON,
        .issMissing,
        .issNotHTTPS,
        .issTrailingSlash,
        .issMalformed,
        .issNotCanonical,
        .nbfMissing,
        .nbfNotNumber,
        .nbfMilliseconds,
        .nbfFractional,
        .nbfNotYetValid,
        .nbfBeforeEvent,
        .nbfOutOfRange,
        .expNotNumber,
        .expMilliseconds,
        .expExpired,
        .expBeforeNbf,
        .expOutOfRange,
        .vcMissing,
        .vcTypeHealthCard,
        .vcTypeLegacy,
        .vcContext,
        .vcFHIRVersion,
        .vcBundleMissing,
        .ridInvalid,
        .sigDER,
        .sigLength,
        .sigInvalid,
        .sigNotChecked,
        .kidUnknown,
        .kidWrong,
        .revoked,
        .keyNotFromIssuer,
        .keySetInvalid,
        .minResourceID,
        .minMeta,
        .minText,
        .minCodeableConceptText,
        .minCodingDisplay,
        .minEmptyElement,
        .minStringWhitespace,
        .stringControlCharacter,
        .stringInvisibleCharacter,
        .bundleResourceType,
        .bundleType,
        .bundleFullURL,
        .bundleEntryNoResource,
        .bundleEntryMissing,
        .bundlePatientCount,
        .bundleNoClinicalEntry,
        .resourceTypeMissing,
        .referenceUnresolved,
        .patientName,
        .patientNameForm,
        .patientPhoto,
        .patientBirthDateMissing,
        .patientBirthDate,
        .patientContact,
        .patientAddressDetail,
        .patientIdentifier,
        .patientGender,
        .patientDataMinimization,
        .fhirUnknownElement,
        .immunizationStatus,
        .immunizationVaccineCode,
        .immunizationPatient,
        .immunizationOccurrence,
        .immunizationOccurrenceDate,
        .immunizationLotNumber,
        .immunizationPerformer,
        .immunizationSubpotent,
        .immunizationProtocolApplied,
        .immunizationDataMinimization,
        .observationStatus,
        .observationCode,
        .observationSubject,
        .observationEffective,
        .observationValue,
        .observationValueString,
        .observationReferenceRange,
        .observationDataMinimization,
        .dateInFuture,
        .dateBeforeBirth,
        .codingCode,
        .codeCVXUnknown,
        .codeCVXNoVaccine,
        .codeCVXUnspecified,
        .codeLOINCInvalid,
        .codeSNOMEDInvalid,
        .metaSecurity,
        .patientNameCharacter,
        .patientNameInvisible,
        .immunizationDuplicate,
        .bundleEntryOrder,
        .bundleMixedContent,
        .bundleInvariant,
        .qrPrefix,
        .qrPrefixCase,
        .qrOddDigits,
        .qrNonDigit,
        .qrPairOutOfRange,
        .qrChunkHeader,
        .qrChunkMissing,
        .qrChunkTooLong,
        .qrChunkUnbalanced,
        .qrChunked,
        .qrTooLong,
        .qrNoSymbol,
        .qrImageUnreadable,
        .qrDecodeBudget,
        .qrGridUnreadable,
        .qrVersionTooHigh,
        .qrVersionNotMinimal,
        .qrSingleSegment,
        .qrECCLevel,
        .qrSegments,
        .qrSegmentsUnreadable,
        .qrChunkNeedless,
        .jwksNotJSON,
        .jwksNoKeys,
        .jwkNotSHCKey,
        .jwkCurve,
        .jwkUse,
        .jwkAlg,
        .jwkCoordinates,
        .jwkKidMissing,
        .jwkKidMismatch,
        .jwkPrivateMember,
        .jwkX5CEncoding,
        .jwkX5CUndecodable,
        .jwkX5CKeyMismatch,
        .jwkX5CChain,
        .jwkX5CSAN,
        .jwkX5CValidity,
        .jwkCRLVersion,
        .crlInvalid,
        .crlKidMismatch,
        .crlVersionMismatch,
        .crlDuplicateRID,
        .crlRIDTimestamp,
        .crlMissing,
        .crlWithoutKeySet,
        .directorySignatureInvalid,
        .directoryInvalid,
        .directoryNotPinned,
        .directoryIssuerUnknown,
        .directoryIssuerArchival,
        .directoryKeysStale,
        .directoryIssuerAuditError,
        .shlPrefix,
        .shlViewerURL,
        .shlPayloadEncoding,
        .shlPayloadNotJSON,
        .shlPayloadForm,
        .shlVersionUnknown,
        .shlURLMissing,
        .shlURLTooLong,
        .shlURLNotHTTPS,
        .shlURLEntropy,
        .shlKeyInvalid,
        .shlKeyText,
        .shlExpInvalid,
        .shlExpired,
        .shlFlagInvalid,
        .shlFlagUWithP,
        .shlLabelInvalid,
        .shlLabelUTF16,
        .shlTextWhitespace,
        .shlQRECC,
        .shlQRNotMinimal,
        .shlManifestNotChecked,
        .shlNotResolved,
        .shlFileMissing,
        .shlKeyWeak,
        .shlWithdrawn,
        .shlJWEForm,
        .shlJWEHeader,
        .shlJWEKid,
        .shlDecryptFailed,
        .shlIVReused,
        .shlContent,
        .shlContentNotChecked,
        .shlBundle,
        .shlKTC,
        .inputUnreadable,
        .inputEncoding,
        .inputTooLarge,
        .inputNotBundle,
        .inputEmpty,
        .inputInvisibleCharacter,
        .jsonInvalid,
        .csvQuoting,
        .csvFieldCount,
        .csvHeader,
        .patientIDMissing,
        .patientIDDuplicate,
        .patientInSeveralFiles,
        .templateValue,
        .eventConflict,
        .templateRequiredEmpty,
        .templateDateWithTime,
        .templateInvalid,
        .bundleInvalid,
        .validationFailed,
        .ridCollision,
        .ridRevoked,
        .ridNone,
        .keyDropped,
        .cardReplaced,
        .outputNameClash,
        .cardWithdrawn,
        .cardOutdated,
        .outputStale,
        .shardIncomplete,
        .shardMismatch,
        .shardPersonSplit,
        .configurationInvalid,
        .keyUnusable,
        .cryptoFailed,
        .compressionFailed,
        .keyFileMissing,
        .ridSecretMissing,
        .keyDemo,
        .siteNotLaidOut,
        .keyNotPublished,
        .qrFailed,
        .imageFailed,
        .outputFailed,
        .outputSymlink,
        .linkFailed,
        .linkKept,
        .linkUpdated,
        .pdfReprintedWithoutLink,
        .pdfFailed,
        .pdfGlyphMissing,
        .pdfNameTooLong,
        .operationBody,
        .operationUnknownPatient,
        .operationUnauthorized,
        .operationForbidden,
        .operationUnavailable,
        .storeUnavailable,
        .storeFailed,
        .storeSchema,
        .storeCannotOpen,
    ]

    private static let byRawValue: [String: RuleCode] = Dictionary(
        allCases.map { ($0.rawValue, $0) }, uniquingKeysWith: { first, _ in first })

    /// The code this library reports under `rawValue` (`"SIG_INVALID"`), or nil for a text it does not know.
    public static func known(_ rawValue: String) -> RuleCode? { byRawValue[rawValue] }
}
